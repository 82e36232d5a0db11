package policy

import "math"

// SlowdownWindow is how much slower than described the node's recently
// finished tasks ran: the sum of their service times over the sum of their
// expected costs, over the last SlowdownWindowSize of them (a ratio of sums,
// so a skewed cost distribution does not bias it). It gates the background
// reserve (Reserve): holding workers back from background work pays only
// where contention slows the work. The agent (from reported service_ms and
// each task's cost_ms) and the simulator keep one each. The zero value is
// empty and ready; it is not safe for concurrent use.
type SlowdownWindow struct {
	ring    ring[slowdownSample]
	sumSvc  float64
	sumCost float64
}

// slowdownSample is one finished task's service time and expected cost.
type slowdownSample struct{ svc, cost float64 }

// SlowdownWindowSize is how many finished tasks the window holds.
const SlowdownWindowSize = 128

// Add records one finished task's service time and expected cost (ms).
// A value that is not finite and positive is ignored: a task without a
// described cost or a reported service time says nothing of its slowdown.
func (w *SlowdownWindow) Add(serviceMs, expectedMs float64) {
	if !(serviceMs > 0 && expectedMs > 0) || math.IsInf(serviceMs, 0) || math.IsInf(expectedMs, 0) {
		return
	}
	if old, ok := w.ring.add(slowdownSample{svc: serviceMs, cost: expectedMs}, SlowdownWindowSize); ok {
		w.sumSvc -= old.svc
		w.sumCost -= old.cost
	}
	w.sumSvc += serviceMs
	w.sumCost += expectedMs
	if w.ring.next == 0 {
		w.resum() // once a lap of the ring: no drift from a long run of subtractions
	}
}

func (w *SlowdownWindow) resum() {
	w.sumSvc, w.sumCost = 0, 0
	for _, s := range w.ring.all() {
		w.sumSvc += s.svc
		w.sumCost += s.cost
	}
}

// Value is the window's slowdown, NaN until it holds MinSlowdownSamples
// tasks.
func (w *SlowdownWindow) Value() float64 {
	if w.ring.len() < MinSlowdownSamples {
		return math.NaN()
	}
	return w.sumSvc / w.sumCost
}

// MinSlowdownSamples is how many finished tasks the slowdown needs before
// it is believed.
const MinSlowdownSamples = 16

// stretchOf is how many times longer than described a slowdown
// (SlowdownWindow.Value) makes work: the slowdown itself, or 1 where it is
// unknown (NaN), under 1 (work that runs faster than described is not
// counted shorter) or infinite.
func stretchOf(slowdown float64) float64 {
	if !(slowdown >= 1) || math.IsInf(slowdown, 1) {
		return 1
	}
	return slowdown
}
