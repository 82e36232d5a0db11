package client

import (
	"math"
	"sync/atomic"
	"time"
)

// durationHist counts durations in log buckets, four per power of two of
// microseconds (each about 19% wide), without locks: a local decision adds
// its table's age at the cost of one atomic add.
type durationHist struct {
	b [histBuckets]atomic.Int64
}

const histBuckets = 4*40 + 1

// bucket 0 holds durations under 1 µs; bucket i ≥ 1 holds [2^((i-1)/4),
// 2^(i/4)) µs.
func histBucket(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if !(us >= 1) {
		return 0
	}
	return min(1+int(4*math.Log2(us)), histBuckets-1)
}

func (h *durationHist) add(d time.Duration) { h.b[histBucket(d)].Add(1) }

// quantile is the upper bound of the bucket holding the q-quantile (0
// when empty).
func (h *durationHist) quantile(q float64) time.Duration {
	var counts [histBuckets]int64
	var n int64
	for i := range h.b {
		counts[i] = h.b[i].Load()
		n += counts[i]
	}
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for i, c := range counts {
		if seen += c; seen >= max(rank, 1) {
			return time.Duration(math.Exp2(float64(i)/4) * float64(time.Microsecond))
		}
	}
	return time.Duration(math.Exp2(float64(histBuckets-1)/4) * float64(time.Microsecond))
}
