package policy

import "math"

// MissesSLAAtTop says whether the task of state s cannot meet its SLA even
// at the top priority: its expected cost plus the expected work already in
// flight at priority 4, per worker, exceed its SLA (FeatCostOverSLA +
// FeatBacklogTop > 1, unsquashed). The backlog is what a task at the top
// level waits behind when the executor serves that level in order (the
// running tasks counted at their whole cost), the level the guard's
// controller gives urgent work.
// A state whose SLA or backlog is unknown (the features' neutral 0) never
// misses: without an SLA nothing can be said of meeting it.
//
// Why: the guard keeps urgent work out of the background only while it can
// still meet its SLA (guard.Config.KeepUrgentMs); past that point keeping
// it at the top only takes workers from the tasks that still can
// (docs/policy.md, "Urgent work stays out of the background").
func (s *State) MissesSLAAtTop() bool {
	return unsquash(s[FeatCostOverSLA])+unsquash(s[FeatBacklogTop]) > 1
}

// unsquash inverts squash: v/(1−v), +Inf at 1.
func unsquash(v float32) float64 {
	if v >= 1 {
		return math.Inf(1)
	}
	return float64(v) / (1 - float64(v))
}
