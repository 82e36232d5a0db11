package signals

import "time"

// maxCounters is the width of a counterWindow sample.
const maxCounters = 8

// counterWindow is Window for plain cumulative counters (CPU jiffies, TCP
// segments, disk ticks): the difference between the newest sample and the
// newest one at least span older. Fixed ring, no allocation per push.
type counterWindow struct {
	ring timedRing[[maxCounters]uint64]
}

func newCounterWindow(span, interval time.Duration) *counterWindow {
	w := NewWindow(span, interval) // reuse its sizing rule
	return &counterWindow{ring: newTimedRing[[maxCounters]uint64](w.ring.span, len(w.ring.v))}
}

func (w *counterWindow) push(at time.Time, v *[maxCounters]uint64) { w.ring.push(at, v) }

// delta returns newest - base per counter (0 where a counter went back)
// and the elapsed time; ok is false until two samples exist.
func (w *counterWindow) delta() (d [maxCounters]uint64, elapsed time.Duration, ok bool) {
	newest, base, elapsed, ok := w.ring.ends()
	if !ok {
		return d, 0, false
	}
	for i := range d {
		if newest[i] >= base[i] {
			d[i] = newest[i] - base[i]
		}
	}
	return d, elapsed, true
}
