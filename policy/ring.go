package policy

// ring holds the last values added to it, overwriting the oldest first:
// the storage of every statistic window here (ClassWindow, WaitWindow,
// SlowdownWindow, SLAWindow), so that the wrap-around is written once.
// The zero value is empty; the first add allocates its size. Not safe for
// concurrent use.
type ring[T any] struct {
	buf     []T
	n, next int
}

// add records x in a ring of size values. When the ring was full it
// returns the value x overwrote, and evicted is true.
func (r *ring[T]) add(x T, size int) (old T, evicted bool) {
	if r.buf == nil {
		r.buf = make([]T, size)
	}
	if r.n == len(r.buf) {
		old, evicted = r.buf[r.next], true
	} else {
		r.n++
	}
	r.buf[r.next] = x
	r.next = (r.next + 1) % len(r.buf)
	return old, evicted
}

// all is the values held, in storage order (not by age).
func (r *ring[T]) all() []T { return r.buf[:r.n] }

// len is how many values the ring holds.
func (r *ring[T]) len() int { return r.n }
