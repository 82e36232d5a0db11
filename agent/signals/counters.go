package signals

import "time"

// maxCounters is the width of a counterWindow sample.
const maxCounters = 8

// counterWindow is Window for plain cumulative counters (CPU jiffies, TCP
// segments, disk ticks): the difference between the newest sample and the
// newest one at least span older. Fixed ring, no allocation per push.
type counterWindow struct {
	span time.Duration
	ring []counterSample
	head int
	n    int
}

type counterSample struct {
	at time.Time
	v  [maxCounters]uint64
}

func newCounterWindow(span, interval time.Duration) *counterWindow {
	w := NewWindow(span, interval) // reuse its sizing rule
	return &counterWindow{span: w.span, ring: make([]counterSample, len(w.ring))}
}

func (w *counterWindow) push(at time.Time, v *[maxCounters]uint64) {
	if w.n > 0 {
		w.head = (w.head + 1) % len(w.ring)
	}
	w.ring[w.head] = counterSample{at: at, v: *v}
	if w.n < len(w.ring) {
		w.n++
	}
}

func (w *counterWindow) reset() { w.n, w.head = 0, 0 }

// delta returns newest - base per counter (0 where a counter went back)
// and the elapsed time; ok is false until two samples exist.
func (w *counterWindow) delta() (d [maxCounters]uint64, elapsed time.Duration, ok bool) {
	if w.n < 2 {
		return d, 0, false
	}
	newest := &w.ring[w.head]
	cutoff := newest.at.Add(-w.span)
	base := &w.ring[(w.head-w.n+1+len(w.ring))%len(w.ring)]
	for i := 1; i < w.n; i++ {
		s := &w.ring[(w.head-i+len(w.ring))%len(w.ring)]
		if !s.at.After(cutoff) {
			base = s
			break
		}
	}
	for i := range d {
		if newest.v[i] >= base.v[i] {
			d[i] = newest.v[i] - base.v[i]
		}
	}
	return d, newest.at.Sub(base.at), true
}
