package policy

import "math"

// StateSchema names the layout of the state vector. A model carries it in its
// ONNX metadata; the agent refuses a model whose schema differs from this one.
const StateSchema = "triage.state.v3"

// NumFeatures is the length of the state vector, NumActions the number of
// priority levels (0 lowest .. 4 highest).
const (
	NumFeatures = 21
	NumActions  = 5
)

// Indices of the features of triage.state.v3: FeatureNames, Neutral, State
// and the agent's per-feature sources are indexed by these, never by bare
// numbers, so the order is written once. docs/policy-history.md says what
// changed from v1 and why.
const (
	FeatQueue        = iota // tasks decided and not finished per worker slot, log-scaled
	FeatSLA                 // SLA of this task, log-scaled
	FeatCost                // expected cost of this task, log-scaled
	FeatClassP50            // p50 service time of the task's class, log-scaled
	FeatClassP99            // p99 service time of the task's class, log-scaled
	FeatAccelMem            // accelerator memory in use / total
	FeatRunqP50             // run-queue latency p50, log-scaled
	FeatRunqP99             // run-queue latency p99, log-scaled
	FeatAcceptQueue         // listen-socket backlog / max
	FeatBlkioP99            // block I/O latency p99, log-scaled
	FeatCPUUtil             // CPU utilisation
	FeatNetOrSyscall        // TCP retransmit fraction, or syscall p99 of the watched cgroup
	FeatWaitP50             // queueing delay p50 of the node's recently finished tasks, log-scaled
	FeatWaitP99             // queueing delay p99 of the same
	// The rest are relative to the task's own SLA, squashed x/(1+x) so that
	// x = 1 (as long as the SLA) reads 0.5: what makes a decision carry
	// over between workloads whose time scales differ by a thousand times.
	FeatCostOverSLA     // expected cost / SLA
	FeatClassP99OverSLA // class p99 service time / SLA
	FeatWaitP99OverSLA  // node queueing delay p99 / SLA
	FeatBacklogTop      // expected work in flight at priority 4, per worker, / SLA
	FeatBacklogFore     // the same at priorities 1..4 (what a foreground task waits behind)
	FeatBacklogAll      // the same at every priority
	// FeatTighterShare is the share of the node's recently decided tasks
	// whose SLA is under half this task's (SLAWindow): whether tighter
	// work shares the node (v3).
	FeatTighterShare
)

// FeatureNames lists the features of triage.state.v3 in vector order. The
// names travel in each model's metadata and are checked on load.
var FeatureNames = [NumFeatures]string{
	FeatQueue:        "queue_per_worker_log",
	FeatSLA:          "sla_log",
	FeatCost:         "cost_log",
	FeatClassP50:     "class_p50_log",
	FeatClassP99:     "class_p99_log",
	FeatAccelMem:     "accel_mem_fill",
	FeatRunqP50:      "runq_p50_log",
	FeatRunqP99:      "runq_p99_log",
	FeatAcceptQueue:  "accept_queue_fill",
	FeatBlkioP99:     "blkio_p99_log",
	FeatCPUUtil:      "cpu_util",
	FeatNetOrSyscall: "net_or_syscall",
	FeatWaitP50:      "wait_p50_log",
	FeatWaitP99:      "wait_p99_log",

	FeatCostOverSLA:     "cost_over_sla",
	FeatClassP99OverSLA: "class_p99_over_sla",
	FeatWaitP99OverSLA:  "wait_p99_over_sla",
	FeatBacklogTop:      "backlog_top_over_sla",
	FeatBacklogFore:     "backlog_fore_over_sla",
	FeatBacklogAll:      "backlog_all_over_sla",
	FeatTighterShare:    "tighter_share",
}

// KernelFeatures are the features read from the kernel (eBPF, or its
// procfs and netlink fallbacks): what `triage eval --ablate kernel` sets
// to their neutral values to measure what reading the kernel is worth.
var KernelFeatures = []int{FeatRunqP50, FeatRunqP99, FeatAcceptQueue, FeatBlkioP99, FeatCPUUtil, FeatNetOrSyscall}

// State is one task's state vector, every value in [0, 1].
type State [NumFeatures]float32

// Inputs is the unit-bearing view of one task in its node's context, before
// normalisation. The agent (agent/state) fills it from kernel signals and the
// task descriptor; the simulator (train/) fills it from its own model of the
// node. Both call Vector, so training and serving cannot drift apart.
//
// A value that is NaN, infinite or negative means "unknown" and maps to the
// feature's neutral value.
type Inputs struct {
	QueueLen        float64 // tasks decided and not yet finished
	Workers         float64 // the executor's worker slots on the node
	SLAMs           float64 // the task's SLA
	CostMs          float64 // expected service time of this task
	ClassP50Ms      float64 // p50 service time of the class (reported outcomes)
	ClassP99Ms      float64 // p99 service time of the class
	AccelMemFill    float64 // accelerator memory in use / total, 0 without a GPU
	RunqP50Us       float64 // run-queue latency p50, microseconds
	RunqP99Us       float64 // run-queue latency p99, microseconds
	AcceptQueueFill float64 // max over watched listeners of backlog / max backlog
	BlkioP99Us      float64 // block I/O latency p99, microseconds
	CPUUtil         float64 // 0..1
	// Feature 11 is the TCP retransmit fraction of sent segments (5% or more
	// reads as 1) unless SyscallFeature is set, in which case it is the
	// syscall latency p99 of the watched cgroup, log-scaled.
	RetransFraction float64
	SyscallP99Us    float64
	SyscallFeature  bool
	// WaitP50Ms and WaitP99Ms are the queueing delay (latency − service
	// time) of the node's recently finished tasks (policy.WaitWindow): what
	// a controller in the service measures.
	WaitP50Ms, WaitP99Ms float64
	// InFlightMs is the expected work (the descriptors' costs, ms) of the
	// tasks decided and not finished, per priority they were given: the
	// backlog a new task would wait behind at each priority.
	InFlightMs [NumActions]float64
	// TighterShare is the share of the node's recently decided tasks whose
	// SLA is under half this task's (SLAWindow.TighterShare).
	TighterShare float64
}

// Log-scale ranges: a value at lo or below maps to 0, at hi or above to 1,
// log10-linear in between. Chosen so that the values a node sees in practice
// spread over the range rather than bunching at one end.
var (
	msRange   = logRange{lo: 0.1, hi: 100_000} // task costs and service times: 100 µs .. 100 s
	runqRange = logRange{lo: 1, hi: 1_000_000} // run-queue latency: 1 µs .. 1 s
	blkRange  = logRange{lo: 10, hi: 10_000_000}
	sysRange  = logRange{lo: 1, hi: 1_000_000}
)

// Neutral is the value each feature takes when its source is missing: a
// middling SLA, cost and class, an idle node (the ones not listed are 0).
var Neutral = State{FeatSLA: 0.5, FeatCost: 0.5, FeatClassP50: 0.5, FeatClassP99: 0.5}

// queueRange is the scale of feature 0: log2(1 + tasks per worker) over
// log2(1 + 64), so one task per worker reads 0.17 and 64 or more read 1.
const queueRange = 64

type logRange struct{ lo, hi float64 }

func (r logRange) scale(x float64) float64 {
	if x <= r.lo {
		return 0
	}
	return math.Log10(x/r.lo) / math.Log10(r.hi/r.lo)
}

// LogScaleMs exposes the millisecond log scale, for reports and tests.
func LogScaleMs(ms float64) float32 { return clamp01(msRange.scale(ms)) }

// Vector normalises in into a state vector. It never returns NaN.
func Vector(in *Inputs) State {
	var s State
	s.setTask(in)
	s.SetQueue(in)
	return s
}

// setFeature writes feature i from v, or its neutral value where v is
// unknown (not ok, NaN or infinite).
func (s *State) setFeature(i int, v float64, ok bool) {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		s[i] = Neutral[i]
		return
	}
	s[i] = clamp01(v)
}

// slaOrNaN is the task's SLA, NaN where it is unknown, which makes every
// feature relative to it unknown.
func slaOrNaN(in *Inputs) float64 {
	if sla := in.SLAMs; knownPositive(sla) {
		return sla
	}
	return math.NaN()
}

// setRelative writes feature f as x over the SLA, squashed.
func (s *State) setRelative(f int, x, sla float64) {
	s.setFeature(f, squash(x/sla), known(x) && !math.IsNaN(sla))
}

// setTask writes every feature that does not depend on the queue: the
// task's own, its class's and the node's.
func (s *State) setTask(in *Inputs) {
	s.setFeature(FeatSLA, msRange.scale(in.SLAMs), knownPositive(in.SLAMs))
	s.setFeature(FeatCost, msRange.scale(in.CostMs), known(in.CostMs))
	s.setFeature(FeatClassP50, msRange.scale(in.ClassP50Ms), known(in.ClassP50Ms))
	s.setFeature(FeatClassP99, msRange.scale(in.ClassP99Ms), known(in.ClassP99Ms))
	s.setFeature(FeatAccelMem, in.AccelMemFill, known(in.AccelMemFill))
	s.setFeature(FeatRunqP50, runqRange.scale(in.RunqP50Us), known(in.RunqP50Us))
	s.setFeature(FeatRunqP99, runqRange.scale(in.RunqP99Us), known(in.RunqP99Us))
	s.setFeature(FeatAcceptQueue, in.AcceptQueueFill, known(in.AcceptQueueFill))
	s.setFeature(FeatBlkioP99, blkRange.scale(in.BlkioP99Us), known(in.BlkioP99Us))
	s.setFeature(FeatCPUUtil, in.CPUUtil, known(in.CPUUtil))
	if in.SyscallFeature {
		s.setFeature(FeatNetOrSyscall, sysRange.scale(in.SyscallP99Us), known(in.SyscallP99Us))
	} else {
		s.setFeature(FeatNetOrSyscall, in.RetransFraction*20, known(in.RetransFraction))
	}
	s.setFeature(FeatWaitP50, msRange.scale(in.WaitP50Ms), known(in.WaitP50Ms))
	s.setFeature(FeatWaitP99, msRange.scale(in.WaitP99Ms), known(in.WaitP99Ms))
	sla := slaOrNaN(in)
	s.setRelative(FeatCostOverSLA, in.CostMs, sla)
	s.setRelative(FeatClassP99OverSLA, in.ClassP99Ms, sla)
	s.setRelative(FeatWaitP99OverSLA, in.WaitP99Ms, sla)
	s.setFeature(FeatTighterShare, in.TighterShare, known(in.TighterShare))
}

// SetQueue rewrites the features that depend on the queue (FeatQueue and
// the three backlog features) from in, and leaves the others as they are.
// The decision table computes a (class, SLA, cost) cell's state once and
// only these per queue row: for a state s = Vector(x), s.SetQueue(in)
// equals Vector(in) wherever in differs from x in QueueLen and InFlightMs
// alone (TestSetQueueIsVectorsQueuePart). The others take most of
// Vector's logarithms, and the table has a row per queue edge.
func (s *State) SetQueue(in *Inputs) {
	perWorker, ok := safeDiv(in.QueueLen, in.Workers)
	s.setFeature(FeatQueue, math.Log2(1+perWorker)/math.Log2(1+queueRange), ok)
	var top, fore, all float64
	for level, ms := range in.InFlightMs {
		all += ms
		if level >= 1 {
			fore += ms
		}
		if level == NumActions-1 {
			top += ms
		}
	}
	w := in.Workers
	if !knownPositive(w) {
		w = math.NaN()
	}
	sla := slaOrNaN(in)
	s.setRelative(FeatBacklogTop, top/w, sla)
	s.setRelative(FeatBacklogFore, fore/w, sla)
	s.setRelative(FeatBacklogAll, all/w, sla)
}

// squash maps [0, ∞) onto [0, 1): x/(1+x).
func squash(x float64) float64 { return x / (1 + x) }

func known(x float64) bool { return x >= 0 && !math.IsInf(x, 0) } // false for NaN too

// knownPositive is known and above zero: an SLA or a worker count.
func knownPositive(x float64) bool { return known(x) && x > 0 }

func safeDiv(a, b float64) (float64, bool) {
	if !known(a) || !known(b) || b == 0 {
		return 0, false
	}
	return a / b, true
}

func clamp01(x float64) float32 {
	switch {
	case math.IsNaN(x) || x < 0:
		return 0
	case x > 1:
		return 1
	}
	return float32(x)
}
