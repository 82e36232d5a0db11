package policy

// CalmCPUs is whether the agent lets short background work (Hold.ShortMs)
// past the calm quarter too (Hold.ShortFree): the node is calm (Reserve's
// CalmReserve for this state and slowdown) and its kernel says the CPUs
// are not oversubscribed, its run-queue latency p99 known (the feature
// above its neutral value) and under ContendedRunqP99Us. A node whose
// kernel says nothing (no run-queue probe, or the agent's --ablate kernel)
// holds the quarter, as before.
//
// Why: the calm quarter keeps workers free for urgent work arriving behind
// short background work. Where the CPUs are oversubscribed a task that
// finds every worker busy pays, beyond the wait for one to free, the
// wake-up of its worker among the other runnable threads, and there the
// quarter pays on real workers (a 15 ms class lost 3 points without it on
// 4 workers spinning on 2 CPUs). Where the run queue is short that cost is
// absent and the quarter idles workers short work could use. So the
// kernel decides: on generated scenarios and the project's files the rule
// gained 0.09, 0.07 and 0.13 points (selection, check, project), and on
// real workers it was level with the tightest class unharmed
// (docs/policy-history.md, "Short background work past the calm quarter
// where the kernel says the CPUs are calm").
func CalmCPUs(s *State, slowdown float64) bool {
	if Reserve(s, slowdown) != CalmReserve {
		return false
	}
	return s[FeatRunqP99] > 0 && !runqContended(s)
}
