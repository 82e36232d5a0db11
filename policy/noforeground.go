package policy

// ForegroundGoneMs is how long no task may have been decided at
// priorities 1–4 before a calm node's reserve protects no one
// (NoForegroundToProtect): five of ForegroundLoad's windows, so a
// foreground that arrives a few times a second, or pauses for a second,
// keeps its reserve.
const ForegroundGoneMs = 5 * ForegroundLoadWindowMs

// ForegroundGone is whether a foreground whose latest task was decided
// idleMs ago (ForegroundLoad.IdleMs) has gone: ForegroundGoneMs or more,
// and a number. What releases a calm reserve (NoForegroundToProtect) and
// bounds an oversubscribed one (ReserveOnBusyCPUs), and what makes the
// agent take a new snapshot on the next foreground decision.
func ForegroundGone(idleMs float64) bool { return idleMs >= ForegroundGoneMs }

// NoForegroundToProtect is whether the agent holds nothing back from
// background work: no foreground task decided for ForegroundGoneMs or
// more (foregroundIdleMs, ForegroundLoad.IdleMs), the node calm (Reserve's
// CalmReserve for this state and slowdown), and its kernel saying the CPUs
// are not oversubscribed, its run-queue latency p99 known (the feature
// above its neutral value) and under ContendedRunqP99Us. A node whose
// kernel says nothing (no run-queue probe, or the agent's --ablate kernel)
// keeps the calm quarter, as before.
//
// Why: the calm quarter keeps workers free for urgent work that arrives
// while background work holds the rest; where every task is background (a
// job queue, a batch tier) it protects no one and idles a quarter of the
// node, which under load is the quarter of the work that misses its SLA
// (testdata/outside/out-all-long, a batch tier at 94% of 8 workers: 0.8718
// with the quarter, 0.9463 without, over 8 seeds). Where the CPUs are
// oversubscribed the quarter is also a concurrency limit that keeps the
// running work fast (a 4-worker node on 3 CPUs lost 6 points without it),
// and the run queue says where: the kernel decides. Chosen on the generated
// selection sets and the project's files, checked on the check sets
// (docs/policy-history.md, "A reserve that protects no one (thirty-ninth
// session)").
func NoForegroundToProtect(s *State, slowdown, foregroundIdleMs float64) bool {
	return noForegroundToProtect(s, Reserve(s, slowdown), foregroundIdleMs)
}

// noForegroundToProtect is NoForegroundToProtect for a node whose Reserve
// is share, already computed.
func noForegroundToProtect(s *State, share, foregroundIdleMs float64) bool {
	return ForegroundGone(foregroundIdleMs) && share == CalmReserve &&
		s[FeatRunqP99] > 0 && !runqContended(s)
}
