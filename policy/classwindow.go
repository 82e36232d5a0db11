package policy

import (
	"math"
	"slices"
)

// ClassWindowSize is how many of a class's most recent finished tasks the
// class features (3 and 4, and the mean-cost fallback of 2) are computed over.
const ClassWindowSize = 256

// classRecompute is how many additions pass between recomputations of the
// quantiles (every addition while a class has fewer samples): the summaries
// are lazy so that an outcome costs a ring write, not a sort.
const classRecompute = 16

// ClassWindow is the statistic behind the class features: the service times
// of a class's last ClassWindowSize finished tasks, their nearest-rank p50
// and p99 and their mean. The agent (agent/state) and the simulator (train/)
// both keep one per class, so training and serving read the same numbers.
// The zero value is empty and ready; it is not safe for concurrent use.
type ClassWindow struct {
	ring           ring[float64]
	pending        int
	p50, p99, mean float64
	scratch        []float64
}

// Add records one finished task's service time in milliseconds.
func (w *ClassWindow) Add(ms float64) {
	w.ring.add(ms, ClassWindowSize)
	w.pending++
	n := w.ring.len()
	if n < classRecompute || w.pending >= classRecompute {
		w.pending = 0
		w.scratch = append(w.scratch[:0], w.ring.all()...)
		slices.Sort(w.scratch)
		w.p50 = NearestRank(w.scratch, 0.5)
		w.p99 = NearestRank(w.scratch, 0.99)
		sum := 0.0
		for _, x := range w.scratch {
			sum += x
		}
		w.mean = sum / float64(n)
	}
}

// Len is the number of samples in the window.
func (w *ClassWindow) Len() int { return w.ring.len() }

// Stats returns p50, p99 and mean as of the latest recomputation; NaN for
// all three while the window is empty.
func (w *ClassWindow) Stats() (p50, p99, mean float64) {
	if w.ring.len() == 0 {
		nan := math.NaN()
		return nan, nan, nan
	}
	return w.p50, w.p99, w.mean
}

// NearestRank is the nearest-rank q-quantile of sorted xs (NaN when empty).
func NearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[NearestRankIndex(len(sorted), q)]
}

// NearestRankIndex is the index of the nearest-rank q-quantile in a sorted
// slice of n > 0 elements: the smallest element with at least q of the
// elements at or below it, ceil(q·n) − 1, clamped to [0, n−1]. It is the one
// quantile definition of the project: the class windows, the simulator and
// every benchmark (internal/bench/measure) use it.
func NearestRankIndex(n int, q float64) int {
	i := int(math.Ceil(q*float64(n))) - 1
	return max(0, min(i, n-1))
}
