// Package state assembles the triage.state.v3 vector of one task from the
// node's kernel signals (agent/signals), the task's descriptor, the
// statistics of its class and the length of the agent's queue. It fills
// policy.Inputs and calls policy.Vector, the same normalisation the
// simulator in train/ uses, so training and serving cannot drift apart.
// Features pairs each value with the source that feeds it.
package state

import (
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/policy"
)

// Descriptor is what an upstream service tells the agent about a task.
type Descriptor struct {
	Class  string
	SLAMs  float64 // deadline after arrival; 0 = none
	CostMs float64 // expected service time; 0 = unknown (the class mean is used)
}

// Config configures an Assembler; the zero value means defaults.
type Config struct {
	// Workers is the denominator of feature 0 (tasks decided and not
	// finished per worker slot): the upstream executor's worker slots on
	// this node. Default the node's CPUs.
	Workers int
	// SyscallFeature makes feature 11 the watched cgroup's syscall p99
	// instead of the TCP retransmit fraction.
	SyscallFeature bool
	// Classes holds the class statistics; nil creates a fresh one.
	Classes *ClassStats
	// AccelMemFill reports accelerator memory in use / total; nil means no
	// accelerator (feature 5 is 0).
	AccelMemFill func() float64
	// BlindKernel leaves the kernel features (policy.KernelFeatures)
	// unknown, so at their neutral values, whatever the signals say: the
	// policy decides as on a node whose kernel says nothing. It is the
	// agent's --ablate kernel, which measures on real workers what `triage
	// eval --ablate kernel` measures in the simulator; not for serving.
	BlindKernel bool
}

// Assembler builds state vectors. It does not track the queue: the caller
// that decides tasks owns that (the agent's tracker) and passes its length,
// so there is one count of the tasks in flight. Safe for concurrent use.
type Assembler struct {
	cfg     Config
	classes *ClassStats
	waitsMu sync.Mutex
	waits   policy.WaitWindow
	// slowdown is the recent tasks' service over their described cost,
	// under waitsMu: the background reserve's gate (policy.Reserve).
	slowdown policy.SlowdownWindow
	// slas holds the SLAs of the recently decided tasks, under waitsMu:
	// feature 20 (policy.SLAWindow).
	slas policy.SLAWindow
	// fg is the foreground's recent load, under waitsMu: what the
	// background reserve is sized to (policy.SizeReserve,
	// policy.SizeCalmReserve).
	fg    policy.ForegroundLoad
	start time.Time // the clock of waits and fg
}

// NewAssembler returns an Assembler with cfg's defaults filled in.
func NewAssembler(cfg Config) *Assembler {
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	if cfg.Classes == nil {
		cfg.Classes = NewClassStats(0)
	}
	return &Assembler{cfg: cfg, classes: cfg.Classes, start: time.Now()}
}

// ObserveWait records one finished task's queueing delay (latency −
// service time), reported at now: features 12 and 13. Negative, NaN and
// infinite values are ignored.
func (a *Assembler) ObserveWait(now time.Time, waitMs float64) {
	if !finite(waitMs) || waitMs < 0 {
		return
	}
	a.waitsMu.Lock()
	a.waits.Add(a.ms(now), waitMs)
	a.waitsMu.Unlock()
}

// ObserveService records one finished task's reported service time and
// the cost its descriptor gave (ms), for Slowdown. Unknown values (0,
// negative, NaN, infinite) are ignored.
func (a *Assembler) ObserveService(serviceMs, costMs float64) {
	a.waitsMu.Lock()
	a.slowdown.Add(serviceMs, costMs)
	a.waitsMu.Unlock()
}

// ObserveDecided records the SLA of one task just decided, by the agent
// or by a client from its table: feature 20 of the tasks decided after it.
// An unknown SLA (0, negative, NaN, infinite) is ignored.
func (a *Assembler) ObserveDecided(slaMs float64) {
	a.waitsMu.Lock()
	a.slas.Add(slaMs)
	a.waitsMu.Unlock()
}

// ObserveLevel records one task decided at now at level, whose expected
// cost is costMs and whose SLA is slaMs: the foreground's load
// (Foreground) and its tightest SLA (ForegroundSLA) count it when
// level is 1 or more.
func (a *Assembler) ObserveLevel(now time.Time, level int, costMs, slaMs float64) {
	a.waitsMu.Lock()
	a.fg.Add(a.ms(now), level, costMs, slaMs)
	a.waitsMu.Unlock()
}

// ForegroundSLA is the tightest SLA (ms) among the foreground's tasks
// decided in the last second before now, 0 while none
// (policy.ForegroundLoad.TightestSLA).
func (a *Assembler) ForegroundSLA(now time.Time) float64 {
	a.waitsMu.Lock()
	defer a.waitsMu.Unlock()
	return a.fg.TightestSLA(a.ms(now))
}

// Foreground is what the background reserve protects at now: the
// foreground's load in workers and how long since its latest task was
// decided (policy.ForegroundLoad.Workers, IdleMs; since the assembler
// started while none has been).
func (a *Assembler) Foreground(now time.Time) policy.Foreground {
	a.waitsMu.Lock()
	defer a.waitsMu.Unlock()
	ms := a.ms(now)
	return policy.Foreground{Workers: a.fg.Workers(ms), IdleMs: a.fg.IdleMs(ms)}
}

// Slowdown is how much slower than described the recently finished tasks
// ran (policy.SlowdownWindow; NaN until enough reported a service time).
func (a *Assembler) Slowdown() float64 {
	a.waitsMu.Lock()
	defer a.waitsMu.Unlock()
	return a.slowdown.Value()
}

// ms is now on the waits' clock.
func (a *Assembler) ms(now time.Time) float64 {
	return float64(now.Sub(a.start)) / float64(time.Millisecond)
}

// Classes returns the class statistics the assembler reads; outcomes feed
// them through Observe.
func (a *Assembler) Classes() *ClassStats { return a.classes }

// Workers is feature 0's denominator.
func (a *Assembler) Workers() int { return a.cfg.Workers }

// Build returns the state vector of task d at time now from a signals
// snapshot, for a caller that tracks no queue (feature 0 is neutral). d and
// snap may be nil: their features then take their neutral values.
func (a *Assembler) Build(d *Descriptor, now time.Time, snap *signals.Snapshot) policy.State {
	in := a.Inputs(d, now, snap)
	return policy.Vector(&in)
}

// Inputs is the unnormalised view Build feeds to policy.Vector; unknown
// values are NaN.
func (a *Assembler) Inputs(d *Descriptor, now time.Time, snap *signals.Snapshot) policy.Inputs {
	node := a.NodeInputs(snap, now)
	return a.TaskInputs(&node, d, -1, now)
}

// NodeInputs is the node part of the inputs, read from snap (nil: no
// signals yet); the task fields are NaN. A caller deciding many tasks
// between two snapshots computes it once and completes it per task with
// TaskInputs.
func (a *Assembler) NodeInputs(snap *signals.Snapshot, now time.Time) policy.Inputs {
	nan := math.NaN()
	in := policy.Inputs{
		QueueLen: nan, Workers: float64(a.cfg.Workers), SLAMs: nan, CostMs: nan,
		ClassP50Ms: nan, ClassP99Ms: nan,
		RunqP50Us: nan, RunqP99Us: nan, AcceptQueueFill: nan, BlkioP99Us: nan,
		CPUUtil: nan, RetransFraction: nan, SyscallP99Us: nan, TighterShare: nan,
		SyscallFeature: a.cfg.SyscallFeature,
	}
	a.waitsMu.Lock()
	in.WaitP50Ms, in.WaitP99Ms = a.waits.Stats(a.ms(now))
	a.waitsMu.Unlock()
	if a.cfg.AccelMemFill != nil {
		in.AccelMemFill = a.cfg.AccelMemFill()
	}
	if snap != nil && !a.cfg.BlindKernel {
		in.RunqP50Us = float64(snap.RunQueue.Latency.P50Us)
		in.RunqP99Us = float64(snap.RunQueue.Latency.P99Us)
		in.AcceptQueueFill = float64(snap.Accept.Fill)
		in.BlkioP99Us = float64(snap.Blkio.Latency.P99Us)
		in.CPUUtil = float64(snap.CPU.Util)
		in.RetransFraction = float64(snap.TCP.RetransFraction)
		in.SyscallP99Us = float64(snap.Syscall.Latency.P99Us)
	}
	return in
}

// TaskInputs completes node (from NodeInputs) with task d at time now and
// queueLen tasks decided and not finished (negative: unknown). d nil leaves
// the task fields unknown.
func (a *Assembler) TaskInputs(node *policy.Inputs, d *Descriptor, queueLen int, now time.Time) policy.Inputs {
	nan := math.NaN()
	in := *node
	in.QueueLen = nan
	if queueLen >= 0 {
		in.QueueLen = float64(queueLen)
	}
	in.SLAMs, in.CostMs, in.ClassP50Ms, in.ClassP99Ms, in.TighterShare = nan, nan, nan, nan, nan
	if d == nil {
		return in
	}
	if d.SLAMs > 0 && finite(d.SLAMs) {
		in.SLAMs = d.SLAMs
		a.waitsMu.Lock()
		in.TighterShare = a.slas.TighterShare(d.SLAMs)
		a.waitsMu.Unlock()
	}
	var mean float64
	in.ClassP50Ms, in.ClassP99Ms, mean = a.classes.Stats(d.Class)
	in.CostMs = mean // DESIGN.md feature 2: the descriptor's, else the class's running mean
	if d.CostMs > 0 && finite(d.CostMs) {
		in.CostMs = d.CostMs
	}
	return in
}

// BuildTask is policy.Vector of TaskInputs.
func (a *Assembler) BuildTask(node *policy.Inputs, d *Descriptor, queueLen int, now time.Time) policy.State {
	in := a.TaskInputs(node, d, queueLen, now)
	return policy.Vector(&in)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
