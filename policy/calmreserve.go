package policy

import "math"

// MinCalmHeldWorkers is how many workers, at least, a calm node's reserve
// holds back where it is sized to the foreground (SizeCalmReserve).
const MinCalmHeldWorkers = 1

// SizeCalmReserve is the calm reserve of a node of workers workers whose
// foreground keeps foregroundWorkers busy (ForegroundLoad.Workers) and
// whose recent tasks ran slowdown times their described cost: the calm
// quarter (CalmReserve) where it holds MinCalmHeldWorkers or fewer (nodes
// of under eight workers: nothing changes there), else ForegroundHeadroom
// times the foreground's load stretched by the slowdown (stretchOf: 1 while
// unknown, under 1 or infinite), in whole workers, never under
// MinCalmHeldWorkers nor over the quarter. A foreground load that is not a
// finite number of zero or more keeps the quarter.
//
// Why: the quarter keeps workers free for urgent work that arrives while
// background work holds the rest, and a quarter is about the foreground's
// need on the small nodes it was chosen on. On a large node it holds far
// more than a small foreground can use: 8 of 32 workers for a foreground
// of two workers' load, while the background queues behind them
// (testdata/outside/out-big-node-overload: 0.9661 with the quarter, 0.9704
// sized, over 8 seeds). Sized as the contended half is (SizeReserve), with
// the same headroom, and at least one worker, so long background work
// never takes the last free one. Chosen on the generated selection sets
// and on generated suites of 24 to 64 workers (`triage eval --gen-workers`),
// checked on their check sets (docs/policy-history.md, "The calm quarter
// sized to the foreground on large nodes (fortieth session)").
func SizeCalmReserve(foregroundWorkers, slowdown float64, workers int) float64 {
	if ReserveWorkers(CalmReserve, workers) <= MinCalmHeldWorkers ||
		!(foregroundWorkers >= 0) || math.IsInf(foregroundWorkers, 1) {
		return CalmReserve
	}
	need := math.Max(MinCalmHeldWorkers, math.Ceil(foregroundWorkers*stretchOf(slowdown)*ForegroundHeadroom))
	return math.Min(CalmReserve, need/float64(workers))
}
