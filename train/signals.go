package train

import (
	"math"
	"math/rand/v2"

	"github.com/triage-agent/triage/policy"
)

// signals synthesises the features a real node's agent would read, so a
// policy trained here learns to read what the agent reads from eBPF. The
// kernel features come from the node's contention (nodeModel: the
// executor's own tasks plus the neighbours), through what `triage
// calibrate` measured the agent's sources read at each level:
//
//   - run-queue latency p50/p99: the calibration at the window's runnable
//     threads per CPU, the writers' CPU not counted (nodeModel.queueingLoad)
//     (p50 at the mean over the window, p99 at the busier
//     half of it, as a histogram's tail is), with the measured spread; the
//     p99 at least the oversubscribed moments' (RunqP99Oversubscribed:
//     the window's time with more runnable threads than CPUs, which the
//     executor's own workers make when they outnumber the CPUs); where the
//     window had writers (the executor's tasks in their I/O part and the
//     neighbours'), what they dilute both to (Calibration.RunqBesideWriters);
//   - block-I/O p99: the calibration at the window's fsync'ing writers
//     (the executor's tasks in their I/O part plus neighbour writers); with
//     no writer the idle node's value;
//   - CPU utilisation: runnable threads per CPU, capped at 1, smoothed over
//     200 ms (the executor's busy workers / workers on a v1 node);
//   - accept-queue fill: the executor's own backlog, which is what the
//     kernel holds in the service's listen queue: 0 until the queue holds
//     more than two tasks per worker, 1 at eighteen;
//   - TCP retransmits: noise (no network in the simulator);
//   - class p50/p99 service time: the last 256 finished tasks of the class,
//     as the agent keeps them from reported service times, slowdowns
//     included;
//   - queueing delay p50/p99: the recently finished tasks' waits
//     (policy.WaitWindow), as the agent keeps them from outcomes.
//
// The agent's window is 1 s sampled every 500 ms: features change at each
// 500 ms tick and describe the second before it.
//
// The noise is drawn from its own stream, a fixed number of draws per
// arrival, so two policies on the same seed see the same noise sequence.
type signals struct {
	sc      *Scenario
	cal     *Calibration
	node    *nodeModel
	r       *rand.Rand
	util    float64
	lastT   float64
	classes []policy.ClassWindow // the agent keeps the same statistics (agent/state)
	waits   policy.WaitWindow
	// slowdown is how much slower than described the recent tasks ran:
	// the background reserve's gate (policy.Reserve), as the agent keeps
	// it, and with each class's pace against it the adaptive order's
	// stretch.
	slowdown policy.Slowdowns
	// slas holds the recent arrivals' SLAs (feature 20), as the agent
	// holds its decided tasks'.
	slas    policy.SLAWindow
	missing [numSources]bool // sources this node lacks: their features are neutral
	// eagerAccept reads the listen queue empty (SimConfig.EagerAccept).
	eagerAccept bool
	vary        nodeVariation // how this node reads unlike the calibrated one

	// The window: per 500 ms bucket the integrals of runnable threads per
	// CPU and of disk writers; the features are read from the last two
	// completed buckets.
	bucket, prev, cur windowBucket
	win               windowValues
}

// windowBucket holds one bucket's integrals over time (ms): of the
// runnable threads per CPU, of the disk writers, and, while there were
// more runnable threads than CPUs, of that time and of the load in it.
type windowBucket struct{ cpuLoad, writers, overMs, overLoad float64 }

// windowValues are the loads the current features describe: the mean and
// the busier bucket's threads per CPU, the writers, and the run-queue p99
// (and its spread) that the window's oversubscribed moments give
// (Calibration.RunqP99Oversubscribed; 0 when they are too few), worked out
// once per window rather than at every arrival.
//
// runq50 and runq99 are the run-queue percentiles' medians and spreads the
// window gives (the calibration at its loads, the oversubscribed moments,
// the writers' dilution): what the features draw around.
type windowValues struct {
	cpuMean, cpuHigh, writers, overP99, overSigma float64
	runq50, runq99                                CPULevel
}

// The kernel-signal sources a node may lack, each feeding its own features.
const (
	srcRunq   = iota // features 6, 7
	srcAccept        // 8: needs a watched listening socket
	srcBlkio         // 9
	srcCPU           // 10
	srcNet           // 11
	numSources
)

const (
	utilTauMs  = 200.0
	windowTick = 500.0 // ms, the agent's sampling interval
)

// newSignals starts the signals of one run. With missing > 0 each source
// is, with that probability and for the whole run, absent, as on a node
// without BTF, without the service's listener watched, or without
// privilege: its features take their neutral values, exactly as the agent
// reports them there. The draw has its own stream, so the noise sequence,
// and with missing 0 every result, is unchanged.
//
// With probability vary the node's levels differ from the calibration's
// (nodeVariation), drawn per run from a stream of their own.
func newSignals(sc *Scenario, cal *Calibration, node *nodeModel, seed int64, missing, vary float64) *signals {
	g := &signals{
		sc: sc, cal: cal, node: node, vary: calibratedNode,
		r:       rand.New(rand.NewPCG(uint64(seed), 0x7472696167650003)),
		classes: make([]policy.ClassWindow, len(sc.Classes)),
	}
	g.win.runq50, g.win.runq99 = g.runqWindow() // an idle window until the first tick
	if vary > 0 {
		g.vary = drawNodeVariation(seed, vary)
	}
	if missing > 0 {
		m := rand.New(rand.NewPCG(uint64(seed), 0x7472696167650004))
		for i := range g.missing {
			g.missing[i] = m.Float64() < missing
		}
	}
	return g
}

// advance moves the utilisation average and the window to t (ms); the
// node's counts are those since the previous call.
func (g *signals) advance(t float64) {
	for g.lastT < t {
		next := math.Min(t, (math.Floor(g.lastT/windowTick)+1)*windowTick)
		dt := next - g.lastT
		target := math.Min(1, g.node.cpuLoad())
		g.util += (target - g.util) * (1 - math.Exp(-dt/utilTauMs))
		load := g.node.queueingLoad()
		g.bucket.cpuLoad += load * dt
		g.bucket.writers += float64(g.node.diskWriters()) * dt
		if load > 1 {
			g.bucket.overMs += dt
			g.bucket.overLoad += load * dt
		}
		g.lastT = next
		if math.Mod(next, windowTick) == 0 {
			g.tick()
		}
	}
}

// tick closes a 500 ms bucket: the features now describe it and the one
// before.
func (g *signals) tick() {
	b := g.bucket
	g.prev, g.cur = g.cur, windowBucket{b.cpuLoad / windowTick, b.writers / windowTick, b.overMs, b.overLoad}
	g.bucket = windowBucket{}
	g.win = windowValues{
		cpuMean: (g.prev.cpuLoad + g.cur.cpuLoad) / 2,
		cpuHigh: math.Max(g.prev.cpuLoad, g.cur.cpuLoad),
		writers: (g.prev.writers + g.cur.writers) / 2,
	}
	if over := g.prev.overMs + g.cur.overMs; over > 0 {
		share, load := over/(2*windowTick), (g.prev.overLoad+g.cur.overLoad)/over
		g.win.overP99, g.win.overSigma = g.cal.RunqP99Oversubscribed(share, load)
	}
	g.win.runq50, g.win.runq99 = g.runqWindow()
}

// runqWindow is the run-queue levels the window's features are drawn
// around: p50 at the mean load, p99 at the busier bucket's, at least the
// oversubscribed moments' (RunqP99Oversubscribed); then what the writers
// in the window make of them (Calibration.RunqBesideWriters: their
// wake-ups dilute the percentiles).
func (g *signals) runqWindow() (mean, high CPULevel) {
	mean, high = g.cal.CPUAt(g.win.cpuMean), g.cal.CPUAt(g.win.cpuHigh)
	if g.win.overP99 > high.RunqP99Us {
		high.RunqP99Us, high.RunqP99Sigma = g.win.overP99, g.win.overSigma
	}
	mean.RunqP50Us = g.cal.RunqBesideWriters(g.win.cpuMean, g.win.writers, mean.RunqP50Us, false)
	high.RunqP99Us = g.cal.RunqBesideWriters(g.win.cpuHigh, g.win.writers, high.RunqP99Us, true)
	return mean, high
}

// state builds the state vector of task o arriving now with queueLen tasks
// decided and not finished (including o's predecessors in service).
func (g *signals) state(o *Outcome, queueLen int, inFlight *[policy.NumActions]float64, now float64) policy.State {
	in := g.inputs(o, queueLen, now)
	in.InFlightMs = *inFlight
	g.slas.Add(o.SLAMs) // after its own share: a task is not tighter than itself
	return policy.Vector(&in)
}

func (g *signals) inputs(o *Outcome, queueLen int, now float64) policy.Inputs {
	perWorker := float64(queueLen) / float64(g.sc.Workers)
	z1, z2, z3, z4 := g.r.NormFloat64(), g.r.NormFloat64(), g.r.NormFloat64(), g.r.NormFloat64()
	mean, high := g.win.runq50, g.win.runq99
	// The disk's p99 at the window's writers besides the first: with one
	// writer or none it is the uncontended write's (io[0]). On the
	// calibrated node not the idle level: with no writes at all the
	// histogram holds a handful of background I/Os, and its p99 (520 µs
	// here against 130 µs for a lone writer) says nothing about the disk.
	// But the agent reads it, so a varied node reads it in half the
	// episodes (nodeVariation).
	others := math.Max(0, g.win.writers-1)
	blk, blkSigma := g.vary.blkio(g.cal, g.cal.IOAt(others), g.win.writers)
	p50, p99, _ := g.classes[o.Class].Stats()
	w50, w99 := g.waits.Stats(now)
	in := policy.Inputs{
		QueueLen: float64(queueLen), Workers: float64(g.sc.Workers),
		SLAMs:      o.SLAMs,
		CostMs:     o.ExpectedMs,
		ClassP50Ms: p50, ClassP99Ms: p99,
		WaitP50Ms: w50, WaitP99Ms: w99,
		TighterShare:    g.slas.TighterShare(o.SLAMs),
		AccelMemFill:    0,
		RunqP50Us:       g.vary.runqScale * mean.RunqP50Us * math.Exp(mean.RunqP50Sigma*z1),
		RunqP99Us:       g.vary.runqScale * high.RunqP99Us * math.Exp(high.RunqP99Sigma*z2),
		AcceptQueueFill: math.Min(1, math.Max(0, (perWorker-2)/16)),
		BlkioP99Us:      blk * math.Exp(blkSigma*z3),
		CPUUtil:         g.util,
		RetransFraction: 0.002 * math.Exp(0.5*z4),
	}
	// p99 is never below p50 in a histogram.
	in.RunqP99Us = math.Max(in.RunqP99Us, in.RunqP50Us)
	nan := math.NaN() // Vector's "unknown": the neutral value
	if g.missing[srcRunq] {
		in.RunqP50Us, in.RunqP99Us = nan, nan
	}
	if g.eagerAccept {
		in.AcceptQueueFill = 0
	}
	if g.missing[srcAccept] {
		in.AcceptQueueFill = nan
	}
	if g.missing[srcBlkio] {
		in.BlkioP99Us = nan
	}
	if g.missing[srcCPU] {
		in.CPUUtil = nan
	}
	if g.missing[srcNet] {
		in.RetransFraction = nan
	}
	return in
}

// phase is the reward phase at t seconds: peak when the offered load is
// above capacity or a burst is on, else steady. The simulator never swaps
// models, so it never reports PhaseModelUpdate; the agent does.
func (g *signals) phase(tSec float64) Phase {
	if g.sc.LoadAt(tSec) > 1 || g.sc.Arrival.InBurst(tSec) {
		return PhasePeak
	}
	return PhaseSteady
}

func (g *signals) finished(o *Outcome) {
	g.classes[o.Class].Add(o.ServiceMs())
	g.waits.Add(o.FinishMs, o.StartMs-o.ArrivalMs)
	g.slowdown.Add(o.Class, o.ServiceMs(), o.ExpectedMs)
}

// quantileSorted is the nearest-rank quantile of sorted xs (policy's, so
// reports and features use one definition).
func quantileSorted(xs []float64, q float64) float64 { return policy.NearestRank(xs, q) }
