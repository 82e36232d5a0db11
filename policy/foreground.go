package policy

import "math"

// ForegroundLoad is the foreground's recent offered load: the expected cost
// of the tasks decided at priorities 1–4 over the last
// ForegroundLoadWindowMs, per millisecond, which is how many workers that
// work keeps busy at its described cost. It sizes the contended background
// reserve (SizeReserve) and a large node's calm one (SizeCalmReserve). The
// agent (every task it decides, and every local decision a client reports)
// and the simulator (every arrival) keep one each. It sums into fixed time
// buckets, so its memory does not grow with the task rate. The zero value
// is empty and ready; it is not safe for concurrent use.
type ForegroundLoad struct {
	sums   [foregroundBuckets]float64
	slas   [foregroundBuckets]float64 // each bucket's tightest SLA; 0: none known
	ids    [foregroundBuckets]int64   // which bucket of the clock each slot holds
	latest int64                      // the latest bucket added to
	lastMs float64                    // the latest foreground task's time; 0, the clock's start, while none
}

const (
	// ForegroundLoadWindowMs is the span the load is measured over: long
	// enough to hold many foreground tasks at the rates a reserve matters
	// for, short enough to follow a burst.
	ForegroundLoadWindowMs = 1000
	foregroundBuckets      = 20
	foregroundBucketMs     = ForegroundLoadWindowMs / foregroundBuckets
)

// Add records one task decided at nowMs (ms on a clock that starts at 0)
// at level, whose expected cost is expectedMs and whose SLA is slaMs.
// Background tasks (level 0) and times already out of the window of the
// latest one added add nothing; a cost, or an SLA, that is not finite and
// positive adds nothing to the load, or to the tightest SLA. Any
// foreground task on the clock counts as seen (IdleMs).
func (f *ForegroundLoad) Add(nowMs float64, level int, expectedMs, slaMs float64) {
	if level >= 1 && onClock(nowMs) {
		f.lastMs = max(f.lastMs, nowMs)
	}
	cost, sla := knownPositive(expectedMs), knownPositive(slaMs)
	if level < 1 || !(cost || sla) || !onClock(nowMs) {
		return
	}
	id := int64(nowMs / foregroundBucketMs)
	if id <= f.latest-foregroundBuckets {
		return // its slot holds a newer bucket now
	}
	f.latest = max(f.latest, id)
	slot := id % foregroundBuckets
	if f.ids[slot] != id {
		f.ids[slot], f.sums[slot], f.slas[slot] = id, 0, 0
	}
	if cost {
		f.sums[slot] += expectedMs
	}
	if sla && (f.slas[slot] == 0 || slaMs < f.slas[slot]) {
		f.slas[slot] = slaMs
	}
}

// Workers is the foreground's load at nowMs: the expected work decided at
// priorities 1–4 in the window that ends there, over the window's length.
func (f *ForegroundLoad) Workers(nowMs float64) float64 {
	sum := 0.0
	f.inWindow(nowMs, func(slot int) { sum += f.sums[slot] })
	return sum / ForegroundLoadWindowMs
}

// TightestSLA is the smallest SLA (ms) among the tasks decided at
// priorities 1–4 in the window that ends at nowMs: what the foreground
// can least afford to wait. 0 while none is known.
func (f *ForegroundLoad) TightestSLA(nowMs float64) float64 {
	tightest := 0.0
	f.inWindow(nowMs, func(slot int) {
		if sla := f.slas[slot]; sla > 0 && (tightest == 0 || sla < tightest) {
			tightest = sla
		}
	})
	return tightest
}

// inWindow calls each with every slot that holds a bucket of the window
// ending at nowMs; none when nowMs is not on the clock.
func (f *ForegroundLoad) inWindow(nowMs float64, each func(slot int)) {
	if !onClock(nowMs) {
		return
	}
	id := int64(nowMs / foregroundBucketMs)
	for i, b := range f.ids {
		if b <= id && b > id-foregroundBuckets {
			each(i)
		}
	}
}

// IdleMs is how long before nowMs the latest foreground task was added:
// since the clock's start while none has been, 0 for a time before the
// latest or off the clock.
func (f *ForegroundLoad) IdleMs(nowMs float64) float64 {
	if !onClock(nowMs) {
		return 0
	}
	return max(0, nowMs-f.lastMs)
}

// onClock is whether t is a time the load can be read at: finite, not
// before the clock's start.
func onClock(t float64) bool { return t >= 0 && !math.IsInf(t, 1) }

// Foreground is what the agent knows of the foreground a reserve protects
// (ForegroundLoad): its load in workers (Workers) and how long ago its
// latest task was decided (IdleMs).
type Foreground struct {
	Workers float64
	IdleMs  float64
}

// ServedReserve is the reserve the agent sends for a node whose state is s
// (the node's part of a state vector), whose recent tasks ran slowdown
// times their described cost and whose foreground is fg, on workers
// workers sharing cpus CPUs (0: unknown): Reserve, with its share sized to
// the foreground (a contended one by SizeReserve, a calm one on a large
// node by SizeCalmReserve) unless the run queue says the CPUs are
// oversubscribed (its p99 at ContendedRunqP99Us or more), and none at all
// where the foreground has gone from a calm node (NoForegroundToProtect).
// Where the CPUs are oversubscribed every runnable worker slows every
// other one, the urgent ones included, and holding half of them back pays
// by itself, until the foreground has gone: then no more than the workers
// beyond the CPUs are held (ReserveOnBusyCPUs). Elsewhere (the disk, a
// neighbour on other CPUs, a slowdown the kernel does not show) the half
// only starves the background.
func ServedReserve(s *State, slowdown float64, fg Foreground, workers, cpus int) float64 {
	share := Reserve(s, slowdown)
	if runqContended(s) {
		return ReserveOnBusyCPUs(share, fg.IdleMs, workers, cpus)
	}
	if noForegroundToProtect(s, share, fg.IdleMs) {
		return 0
	}
	if share == CalmReserve {
		return SizeCalmReserve(fg.Workers, slowdown, workers)
	}
	return SizeReserve(share, fg.Workers, slowdown, workers)
}

// ForegroundHeadroom is how many times the foreground's load, stretched by
// the node's slowdown, a contended node holds back from background work.
const ForegroundHeadroom = 3

// SizeReserve sizes a contended reserve (Reserve's ContendedReserve) to
// the foreground that needs it: ForegroundHeadroom times the foreground's
// load in workers (ForegroundLoad.Workers) stretched by the slowdown (1
// while unknown or under 1), rounded up to whole workers, and never under
// CalmReserve nor over ContendedReserve. A calm share is returned as it
// is.
//
// Why: half of a contended node's workers held back protects urgent work
// from long background tasks, but where the urgent work is a sliver of the
// node (a 20 ms class of 2 ms tasks beside a 200 ms class the policy sends
// to the background) the half starves the background, which the policy
// then cannot rescue without lifting that class beside the urgent one.
// ServedReserve applies it where the CPUs are not oversubscribed.
// Chosen on generated scenarios only (docs/policy-history.md, "A reserve
// sized to the foreground").
func SizeReserve(share, foregroundWorkers, slowdown float64, workers int) float64 {
	if share < ContendedReserve || workers <= 0 || !(foregroundWorkers >= 0) || math.IsInf(foregroundWorkers, 0) {
		return share
	}
	s := slowdown
	if !(s >= 1) {
		s = 1
	}
	need := math.Ceil(foregroundWorkers * s * ForegroundHeadroom)
	return math.Max(CalmReserve, math.Min(ContendedReserve, need/float64(workers)))
}
