package policy

import "math"

// The background reserve: the share of an executor's workers that
// background work (priority 0) must leave free for the foreground
// (priorities 1–4). Service is non-preemptive, so a long background task
// on the last free worker makes every urgent task behind it wait; only
// holding workers back prevents it.
//
// The agent computes the reserve from the node's state and sends it with
// every node state and decision (wire: NodeState.background_reserve,
// DecideResponse.background_reserve); an executor that honours it starts a
// background task only while more than Reserve(...)×workers are free.
//
// The rule: a quarter of the workers on a calm node; half of them on a
// contended one. Which node is contended is said by the work itself where
// it can say it: the recent tasks ran at least MinReserveSlowdown times
// their described cost (SlowdownWindow, from the service times upstreams
// report), whatever slowed them (the CPUs, the disk, a neighbour). Where
// no slowdown is known (too few tasks finished, or an upstream that
// reports no service times) the kernel says it: the run-queue latency p99
// at or over ContendedRunqP99Us. On a contended node every extra running
// worker slows every other one, the urgent ones included, and a background
// task holds its worker longer than described, so the background work that
// would run there costs the foreground more than on a calm node. Work that
// contention does not slow (it waits on something else, or it is the
// bench's wall-clock work) gains nothing from being held back and loses
// its throughput, hence a known slowdown under the line keeps the node
// calm whatever the kernel says.
// Chosen on generated scenarios only (docs/policy-history.md, "The
// background reserve"); the shared scenarios were reported on, not
// chosen on.
//
// What the agent sends is ServedReserve (foreground.go): this rule, with a
// contended half, and on nodes of eight workers or more the calm quarter
// (calmreserve.go), sized down to the foreground it protects where the run
// queue does not say the CPUs are oversubscribed.
const (
	// CalmReserve is the share held back on a calm node: one worker in
	// four, none on nodes with fewer than four workers.
	CalmReserve = 0.25
	// ContendedReserve is the share held back on a contended node.
	ContendedReserve = 0.5
	// ContendedRunqP99Us is the run-queue latency p99 (µs) from which a
	// node whose slowdown is unknown counts as contended: 1 ms. On the
	// calibrated 2-CPU node one runnable thread per CPU reads about 60 µs
	// and 1.5 per CPU 4.6 ms (train/calibration/default.json).
	ContendedRunqP99Us = 1000
	// MinReserveSlowdown is the slowdown (SlowdownWindow) from which the
	// node counts as contended: the work runs a quarter slower than
	// described. Under it the work runs as described, and a contended
	// kernel is not believed.
	MinReserveSlowdown = 1.25
)

// contendedRunqFeature is ContendedRunqP99Us on feature FeatRunqP99's scale.
var contendedRunqFeature = float32(runqRange.scale(ContendedRunqP99Us))

// runqContended says whether the run-queue latency p99 of the node state s
// is at or over ContendedRunqP99Us: the CPUs are oversubscribed.
func runqContended(s *State) bool { return s[FeatRunqP99] >= contendedRunqFeature }

// Reserve is the background reserve for a node whose state (the node's
// part of a state vector) is s and whose recent tasks ran slowdown times
// their described cost (SlowdownWindow.Value; NaN, or 0 or less, when
// unknown): ContendedReserve when the slowdown is at least
// MinReserveSlowdown, or, the slowdown unknown, when the run-queue latency
// p99 says the CPUs are contended; else CalmReserve. A node whose kernel
// says nothing (the feature at its neutral value, 0) and whose slowdown is
// unknown is calm.
func Reserve(s *State, slowdown float64) float64 {
	contended := slowdown >= MinReserveSlowdown
	if !(slowdown > 0) { // unknown: the kernel alone
		contended = runqContended(s)
	}
	if contended {
		return ContendedReserve
	}
	return CalmReserve
}

// ReserveWorkers is how many of workers a reserve share holds back:
// the share rounded down, so a calm node with fewer than four workers
// holds none back (holding one of two or three from all background work
// would idle too much of it; Hold.Held holds one from the long work
// alone). A share outside [0, 1] or NaN is clamped (NaN reads as calm).
func ReserveWorkers(share float64, workers int) int {
	if math.IsNaN(share) {
		share = CalmReserve
	}
	share = math.Max(0, math.Min(1, share))
	return int(math.Floor(share*float64(workers) + 1e-9))
}
