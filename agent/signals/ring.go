package signals

import "time"

// timedRing is a fixed ring of timestamped samples, the part Window and
// counterWindow share: push never allocates, and ends finds the two samples
// a window of span is the difference of.
type timedRing[T any] struct {
	span time.Duration
	at   []time.Time
	v    []T
	head int // index of the newest sample
	n    int
}

func newTimedRing[T any](span time.Duration, size int) timedRing[T] {
	return timedRing[T]{span: span, at: make([]time.Time, size), v: make([]T, size)}
}

func (r *timedRing[T]) push(at time.Time, v *T) {
	if r.n > 0 {
		r.head = (r.head + 1) % len(r.v)
	}
	r.at[r.head], r.v[r.head] = at, *v
	if r.n < len(r.v) {
		r.n++
	}
}

func (r *timedRing[T]) reset() { r.n, r.head = 0, 0 }

// ends returns the newest sample and the newest one at least span older
// (the oldest held when none is that old), with the time between them; ok
// is false until two samples exist.
func (r *timedRing[T]) ends() (newest, base *T, elapsed time.Duration, ok bool) {
	if r.n < 2 {
		return nil, nil, 0, false
	}
	size := len(r.v)
	cutoff := r.at[r.head].Add(-r.span)
	// Walk back from the newest to the first sample at or before cutoff.
	b := (r.head - r.n + 1 + size) % size
	for i := 1; i < r.n; i++ {
		if k := (r.head - i + size) % size; !r.at[k].After(cutoff) {
			b = k
			break
		}
	}
	return &r.v[r.head], &r.v[b], r.at[r.head].Sub(r.at[b]), true
}
