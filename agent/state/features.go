package state

import (
	"time"

	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/policy"
)

// Source names what feeds one feature of the state vector: a kernel
// signal's source as agent/signals reports it (ebpf, netlink, procfs,
// none), or one of the task's own (its descriptor, the outcomes reported
// for its class, the agent's count of tasks in flight).
type Source string

// The sources DESIGN.md names; the kernel ones are agent/signals' kinds.
const (
	SourceEBPF       = Source(signals.SourceEBPF)
	SourceNetlink    = Source(signals.SourceNetlink)
	SourceProcfs     = Source(signals.SourceProcfs)
	SourceNone       = Source(signals.SourceNone)
	SourceDescriptor = Source("descriptor")
	SourceOutcomes   = Source("outcomes")
	SourceAgent      = Source("agent")
)

// Feature is one feature's value with the source that feeds it.
type Feature struct {
	Value  float32
	Source Source
}

// Features is a state vector with each feature's source, indexed by the
// policy.Feat* constants.
type Features [policy.NumFeatures]Feature

// Features is the node's own state vector, each value with its source: the
// node features from snap (nil: no signals yet, every one neutral and
// "none"), feature 0 from queueLen tasks in flight (negative: unknown, so
// neutral), the task features neutral. It is the one place that says which
// source feeds which feature, so /metrics, /readyz, the node-state
// snapshot and `triage signals`, which all read it, cannot disagree.
func (a *Assembler) Features(snap *signals.Snapshot, queueLen int, now time.Time) Features {
	node := a.NodeInputs(snap, now)
	vec := a.BuildTask(&node, nil, queueLen, now)
	var f Features
	for i, src := range a.sources(snap) {
		f[i] = Feature{Value: vec[i], Source: src}
	}
	return f
}

// sources names the source of each feature. Feature 11 follows
// Config.SyscallFeature, as its value does (policy.Vector).
func (a *Assembler) sources(snap *signals.Snapshot) [policy.NumFeatures]Source {
	var s [policy.NumFeatures]Source
	s[policy.FeatQueue] = SourceAgent
	s[policy.FeatSLA] = SourceDescriptor
	s[policy.FeatCost] = SourceDescriptor // the class's mean cost when the descriptor has none
	s[policy.FeatClassP50] = SourceOutcomes
	s[policy.FeatClassP99] = SourceOutcomes
	s[policy.FeatAccelMem] = SourceNone
	if a.cfg.AccelMemFill != nil {
		s[policy.FeatAccelMem] = SourceAgent // the embedder's reader, called by the agent
	}
	if snap == nil {
		snap = &signals.Snapshot{} // every signal names no source: "none"
	}
	s[policy.FeatRunqP50] = kind(snap.RunQueue.Source)
	s[policy.FeatRunqP99] = kind(snap.RunQueue.Source)
	s[policy.FeatAcceptQueue] = kind(snap.Accept.Source)
	s[policy.FeatBlkioP99] = kind(snap.Blkio.Source)
	s[policy.FeatCPUUtil] = kind(snap.CPU.Source)
	if a.cfg.SyscallFeature {
		s[policy.FeatNetOrSyscall] = kind(snap.Syscall.Source)
	} else {
		s[policy.FeatNetOrSyscall] = kind(snap.TCP.Source)
	}
	if a.cfg.BlindKernel { // nothing feeds them, whatever the probes read
		for _, f := range policy.KernelFeatures {
			s[f] = SourceNone
		}
	}
	s[policy.FeatWaitP50] = SourceOutcomes // latency − service_ms of reported outcomes
	s[policy.FeatWaitP99] = SourceOutcomes
	// The features relative to the SLA take their source from what they
	// divide: the descriptor's cost, the outcomes' statistics, the agent's
	// own backlog.
	s[policy.FeatCostOverSLA] = SourceDescriptor
	s[policy.FeatClassP99OverSLA] = SourceOutcomes
	s[policy.FeatWaitP99OverSLA] = SourceOutcomes
	s[policy.FeatBacklogTop] = SourceAgent
	s[policy.FeatBacklogFore] = SourceAgent
	s[policy.FeatBacklogAll] = SourceAgent
	s[policy.FeatTighterShare] = SourceAgent // the SLAs of the tasks it decided
	return s
}

// kind is a signal's source; a signal that names none has none.
func kind(s signals.Source) Source {
	if s.Kind == "" {
		return SourceNone
	}
	return Source(s.Kind)
}

// Vector is the values alone, as policy.Vector returns them.
func (f *Features) Vector() policy.State {
	var v policy.State
	for i := range f {
		v[i] = f[i].Value
	}
	return v
}

// Sources is each feature's source name, in vector order.
func (f *Features) Sources() []string {
	out := make([]string, len(f))
	for i := range f {
		out[i] = string(f[i].Source)
	}
	return out
}
