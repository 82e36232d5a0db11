package policy

import (
	"math"
	"slices"
)

// WaitWindow is the statistic behind features 12 and 13 (triage.state.v3):
// the queueing delay (latency − service time) of the node's recently
// finished tasks, over the last WaitWindowSize of them that finished in the
// last WaitWindowMs, as nearest-rank p50 and p99. It is what a controller
// in the service measures (CoDel, Cinnamon, Gradient2 all read queueing
// delay or latency), so the policy sees what they see. The agent (from
// reported outcomes) and the simulator keep one each, so training and
// serving read the same numbers. The zero value is empty and ready; it is
// not safe for concurrent use.
type WaitWindow struct {
	ring     ring[waitSample]
	pending  int
	lastAt   float64 // when the summary was computed
	p50, p99 float64
	scratch  []float64
}

// waitSample is one finished task's queueing delay and when it finished.
type waitSample struct{ at, wait float64 }

// WaitWindowSize and WaitWindowMs bound the window: the newest samples,
// and only recent ones, so that a quiet node's statistic fades.
const (
	WaitWindowSize = 256
	WaitWindowMs   = 2000
)

// waitRecompute is how many additions, or how much time, pass between
// recomputations: the summary is lazy so that a decision costs a lookup.
const (
	waitRecompute   = 16
	waitRecomputeMs = 100
)

// Add records one finished task's queueing delay, at time atMs (ms on any
// clock that only moves forward).
func (w *WaitWindow) Add(atMs, waitMs float64) {
	w.ring.add(waitSample{at: atMs, wait: math.Max(0, waitMs)}, WaitWindowSize)
	w.pending++
}

// Stats returns the p50 and p99 of the window at nowMs; NaN for both when
// no task finished in the last WaitWindowMs.
func (w *WaitWindow) Stats(nowMs float64) (p50, p99 float64) {
	if w.pending >= waitRecompute || w.pending > 0 && w.ring.len() < waitRecompute || nowMs-w.lastAt >= waitRecomputeMs || w.lastAt == 0 {
		w.recompute(nowMs)
	}
	return w.p50, w.p99
}

func (w *WaitWindow) recompute(nowMs float64) {
	w.pending, w.lastAt = 0, nowMs
	w.scratch = w.scratch[:0]
	for _, s := range w.ring.all() {
		if nowMs-s.at <= WaitWindowMs {
			w.scratch = append(w.scratch, s.wait)
		}
	}
	if len(w.scratch) == 0 {
		w.p50, w.p99 = math.NaN(), math.NaN()
		return
	}
	slices.Sort(w.scratch)
	w.p50, w.p99 = NearestRank(w.scratch, 0.5), NearestRank(w.scratch, 0.99)
}
