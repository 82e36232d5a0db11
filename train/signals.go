package train

import (
	"math"
	"math/rand/v2"

	"github.com/triage-agent/triage/policy"
)

// signals synthesises the kernel-signal features a real node would show,
// from the simulator's own state, so a policy trained here learns to read
// the same features the agent reads from eBPF. The shapes are chosen to be
// what those signals do on a CPU-bound node, not calibrated to one machine:
//
//   - CPU utilisation: busy workers / workers, smoothed over 200 ms (as a
//     /proc/stat or eBPF sampler over a short window would).
//   - run-queue latency: a few µs on an idle node, rising steeply as
//     utilisation approaches 1 and with the number of runnable tasks queued
//     per worker; p99 several times p50.
//   - accept-queue fill: 0 until the queue holds more than two tasks per
//     worker (the service stops accepting promptly), then rising to 1 at
//     eighteen per worker.
//   - block-I/O p99 and TCP retransmits: mostly noise, slightly worse with load.
//   - class p50/p99 service time: from the last 256 finished tasks of the class.
//
// The noise is drawn from its own stream, a fixed number of draws per
// arrival, so two policies on the same seed see the same noise sequence.
type signals struct {
	sc       *Scenario
	queueCap int
	r        *rand.Rand
	util     float64
	lastT    float64
	classes  []policy.ClassWindow // the agent keeps the same statistic (agent/state)
	missing  [numSources]bool     // sources this node lacks: their features are neutral
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

const utilTauMs = 200.0

// newSignals starts the signals of one run. With missing > 0 each source
// is, with that probability and for the whole run, absent, as on a node
// without BTF, without the service's listener watched, or without
// privilege: its features take their neutral values, exactly as the agent
// reports them there. The draw has its own stream, so the noise sequence,
// and with missing 0 every result, is unchanged.
func newSignals(sc *Scenario, queueCap int, seed int64, missing float64) *signals {
	g := &signals{
		sc: sc, queueCap: queueCap,
		r:       rand.New(rand.NewPCG(uint64(seed), 0x7472696167650003)),
		classes: make([]policy.ClassWindow, len(sc.Classes)),
	}
	if missing > 0 {
		m := rand.New(rand.NewPCG(uint64(seed), 0x7472696167650004))
		for i := range g.missing {
			g.missing[i] = m.Float64() < missing
		}
	}
	return g
}

// advance moves the utilisation average to t; busy is the worker count
// since the previous call.
func (g *signals) advance(t float64, busy, workers int) {
	dt := t - g.lastT
	if dt <= 0 {
		return
	}
	target := float64(busy) / float64(workers)
	g.util += (target - g.util) * (1 - math.Exp(-dt/utilTauMs))
	g.lastT = t
}

func (g *signals) noise(sigma float64) float64 { return math.Exp(sigma * g.r.NormFloat64()) }

// state builds the state vector of task o arriving now with queueLen tasks
// decided and not finished (including o's predecessors in service).
func (g *signals) state(o *Outcome, queueLen int, now float64) policy.State {
	w := float64(g.sc.Workers)
	perWorker := float64(queueLen) / w
	u := g.util
	n1, n2, n3, n4 := g.noise(0.2), g.noise(0.3), g.noise(0.3), g.noise(0.5)
	runqP50 := 4 * (1 + 40*math.Pow(u, 4)) * (1 + math.Log1p(perWorker)) * n1
	p50, p99, _ := g.classes[o.Class].Stats()
	in := policy.Inputs{
		QueueLen: float64(queueLen), QueueCap: float64(g.queueCap),
		RemainingMs: o.DeadlineMs() - now, SLAMs: o.SLAMs,
		CostMs:     o.ExpectedMs,
		ClassP50Ms: p50, ClassP99Ms: p99,
		AccelMemFill:    0,
		RunqP50Us:       runqP50,
		RunqP99Us:       runqP50 * (4 + 6*u) * n2,
		AcceptQueueFill: math.Min(1, math.Max(0, (perWorker-2)/16)),
		BlkioP99Us:      300 * (1 + u) * n3,
		CPUUtil:         u,
		RetransFraction: 0.002 * (1 + 2*u) * n4,
	}
	nan := math.NaN() // Vector's "unknown": the neutral value
	if g.missing[srcRunq] {
		in.RunqP50Us, in.RunqP99Us = nan, nan
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
	return policy.Vector(&in)
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

func (g *signals) finished(o *Outcome) { g.classes[o.Class].Add(o.CostMs) }

// quantileSorted is the nearest-rank quantile of sorted xs (policy's, so
// reports and features use one definition).
func quantileSorted(xs []float64, q float64) float64 { return policy.NearestRank(xs, q) }
