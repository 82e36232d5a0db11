package policy

import "math"

// StateSchema names the layout of the state vector. A model carries it in its
// ONNX metadata; the agent refuses a model whose schema differs from this one.
const StateSchema = "triage.state.v1"

// NumFeatures is the length of the state vector, NumActions the number of
// priority levels (0 lowest .. 4 highest).
const (
	NumFeatures = 12
	NumActions  = 5
)

// Indices of the features of triage.state.v1: FeatureNames, Neutral, State
// and the agent's per-feature sources are indexed by these, never by bare
// numbers, so the order is written once.
const (
	FeatQueueFill    = iota // node task queue length / capacity
	FeatSLASlack            // remaining time / SLA of this task
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
)

// FeatureNames lists the features of triage.state.v1 in vector order. The
// names travel in each model's metadata and are checked on load.
var FeatureNames = [NumFeatures]string{
	FeatQueueFill:    "queue_fill",
	FeatSLASlack:     "sla_slack",
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
}

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
	QueueLen, QueueCap float64 // tasks decided and not yet finished; capacity
	RemainingMs, SLAMs float64 // time left until the SLA deadline; the SLA
	CostMs             float64 // expected service time of this task
	ClassP50Ms         float64 // p50 service time of the class (reported outcomes)
	ClassP99Ms         float64 // p99 service time of the class
	AccelMemFill       float64 // accelerator memory in use / total, 0 without a GPU
	RunqP50Us          float64 // run-queue latency p50, microseconds
	RunqP99Us          float64 // run-queue latency p99, microseconds
	AcceptQueueFill    float64 // max over watched listeners of backlog / max backlog
	BlkioP99Us         float64 // block I/O latency p99, microseconds
	CPUUtil            float64 // 0..1
	// Feature 11 is the TCP retransmit fraction of sent segments (5% or more
	// reads as 1) unless SyscallFeature is set, in which case it is the
	// syscall latency p99 of the watched cgroup, log-scaled.
	RetransFraction float64
	SyscallP99Us    float64
	SyscallFeature  bool
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

// Neutral is the value each feature takes when its source is missing: no
// slack spent, a middling cost and class, an idle node (the ones not
// listed are 0).
var Neutral = State{FeatSLASlack: 1, FeatCost: 0.5, FeatClassP50: 0.5, FeatClassP99: 0.5}

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
	set := func(i int, v float64, ok bool) {
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			s[i] = Neutral[i]
			return
		}
		s[i] = clamp01(v)
	}
	qf, ok := safeDiv(in.QueueLen, in.QueueCap)
	set(FeatQueueFill, qf, ok)
	if known(in.SLAMs) && in.SLAMs > 0 && !math.IsNaN(in.RemainingMs) {
		set(FeatSLASlack, in.RemainingMs/in.SLAMs, true) // late tasks have negative remaining: clamps to 0
	} else {
		s[FeatSLASlack] = Neutral[FeatSLASlack]
	}
	set(FeatCost, msRange.scale(in.CostMs), known(in.CostMs))
	set(FeatClassP50, msRange.scale(in.ClassP50Ms), known(in.ClassP50Ms))
	set(FeatClassP99, msRange.scale(in.ClassP99Ms), known(in.ClassP99Ms))
	set(FeatAccelMem, in.AccelMemFill, known(in.AccelMemFill))
	set(FeatRunqP50, runqRange.scale(in.RunqP50Us), known(in.RunqP50Us))
	set(FeatRunqP99, runqRange.scale(in.RunqP99Us), known(in.RunqP99Us))
	set(FeatAcceptQueue, in.AcceptQueueFill, known(in.AcceptQueueFill))
	set(FeatBlkioP99, blkRange.scale(in.BlkioP99Us), known(in.BlkioP99Us))
	set(FeatCPUUtil, in.CPUUtil, known(in.CPUUtil))
	if in.SyscallFeature {
		set(FeatNetOrSyscall, sysRange.scale(in.SyscallP99Us), known(in.SyscallP99Us))
	} else {
		set(FeatNetOrSyscall, in.RetransFraction*20, known(in.RetransFraction))
	}
	return s
}

func known(x float64) bool { return x >= 0 && !math.IsInf(x, 0) } // false for NaN too

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
