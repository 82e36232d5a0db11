package policy

import "math"

// LateBackgroundBusyShare is the share of an executor's workers, rounded
// up, that the busy ones must stay under for late background work to
// start while a short limit is given (Hold.LateStarts): a quarter, so an
// idle node on four workers or fewer.
const LateBackgroundBusyShare = 0.25

// LateStarts is whether a late background task (priority 0, no longer
// able to meet its SLA at its expected cost), or a task of any priority
// whose deadline has passed (train.lateWork), may start when busy of
// workers are serving under h. As any long background task, only while
// more workers are free than h holds back from it (Held); and while a
// short limit is given (h.ShortMs: the agent's hold, not an executor's own
// quarter), only while fewer than LateBackgroundBusyShare of the workers,
// rounded up, are busy.
//
// Why: late work has missed its SLA, so starting it meets none, and
// service is non-preemptive, so it holds its worker against every task
// that arrives behind it and could still meet its own. After an overload
// or an interference episode the late backlog took every lull of the
// background workers, and the short background work that arrived then
// waited behind it (the shared noisy-neighbour in the simulator: its
// 200 ms class met 0.82 of its SLAs in the quiet period after the CPU
// storm, 0.94 with the rule). Kept to a nearly idle node, late work still
// runs, in the lulls, and takes no worker from work that can still be
// saved. Chosen on generated scenarios and the project's files against
// one, two and three workers beyond the reserve, half the workers busy
// and an idle node (docs/policy-history.md, "Late background work waits
// for a lull").
func (h Hold) LateStarts(busy, workers int) bool {
	long, _ := h.Held(workers)
	if workers-busy <= long {
		return false
	}
	if !(h.ShortMs > 0) {
		return true
	}
	return float64(busy) < math.Ceil(LateBackgroundBusyShare*float64(workers))
}
