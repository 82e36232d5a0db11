package state

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/policy"
)

// designSources is the vocabulary DESIGN.md gives for a feature's source.
var designSources = []Source{SourceEBPF, SourceNetlink, SourceProcfs, SourceNone, SourceDescriptor, SourceOutcomes, SourceAgent}

func withSources(s *signals.Snapshot, runq, accept, blkio, sys, tcp, cpu signals.SourceKind) *signals.Snapshot {
	s.RunQueue.Source.Kind, s.Accept.Source.Kind, s.Blkio.Source.Kind = runq, accept, blkio
	s.Syscall.Source.Kind, s.TCP.Source.Kind, s.CPU.Source.Kind = sys, tcp, cpu
	return s
}

func TestEveryFeatureHasASource(t *testing.T) {
	a := NewAssembler(Config{})
	e := signals.SourceEBPF
	for name, snap := range map[string]*signals.Snapshot{
		"no signals yet": nil,
		"eBPF":           withSources(knownSnapshot(), e, e, e, e, e, signals.SourceProcfs),
		"sources unset":  knownSnapshot(),
	} {
		f := a.Features(snap, 3, time.Now())
		for i := range f {
			if !slices.Contains(designSources, f[i].Source) {
				t.Errorf("%s: feature %s has source %q, not one DESIGN.md names", name, policy.FeatureNames[i], f[i].Source)
			}
		}
		if got := f.Sources(); len(got) != policy.NumFeatures || got[policy.FeatQueue] != "agent" {
			t.Errorf("%s: Sources() = %v", name, got)
		}
	}
}

// The values are the vector the agent decides with, and each names where
// it comes from: the task's own sources are fixed, the node's are the
// snapshot's.
func TestFeaturesPairValuesWithSources(t *testing.T) {
	a := NewAssembler(Config{Workers: 4})
	now := time.Unix(1000, 0)
	snap := withSources(knownSnapshot(), signals.SourceEBPF, signals.SourceNetlink, signals.SourceProcfs,
		signals.SourceNone, signals.SourceEBPF, signals.SourceProcfs)
	f := a.Features(snap, 4, now)
	node := a.NodeInputs(snap, now)
	if want := a.BuildTask(&node, nil, 4, now); f.Vector() != want {
		t.Fatalf("Features values %v\nwant BuildTask      %v", f.Vector(), want)
	}
	if f[policy.FeatQueue].Value != float32(1/math.Log2(65)) || f[policy.FeatCPUUtil].Value != 0.75 {
		t.Errorf("queue %v, cpu %v", f[policy.FeatQueue].Value, f[policy.FeatCPUUtil].Value)
	}
	want := map[int]Source{
		policy.FeatQueue: SourceAgent, policy.FeatSLA: SourceDescriptor, policy.FeatCost: SourceDescriptor,
		policy.FeatClassP50: SourceOutcomes, policy.FeatClassP99: SourceOutcomes, policy.FeatAccelMem: SourceNone,
		policy.FeatRunqP50: SourceEBPF, policy.FeatRunqP99: SourceEBPF, policy.FeatAcceptQueue: SourceNetlink,
		policy.FeatBlkioP99: SourceProcfs, policy.FeatCPUUtil: SourceProcfs, policy.FeatNetOrSyscall: SourceEBPF,
		policy.FeatWaitP50: SourceOutcomes, policy.FeatWaitP99: SourceOutcomes,
		policy.FeatCostOverSLA: SourceDescriptor, policy.FeatClassP99OverSLA: SourceOutcomes, policy.FeatWaitP99OverSLA: SourceOutcomes,
		policy.FeatBacklogTop: SourceAgent, policy.FeatBacklogFore: SourceAgent, policy.FeatBacklogAll: SourceAgent,
		policy.FeatTighterShare: SourceAgent,
	}
	for i, src := range want {
		if f[i].Source != src {
			t.Errorf("feature %s source %q, want %q", policy.FeatureNames[i], f[i].Source, src)
		}
	}
	if len(want) != policy.NumFeatures {
		t.Fatalf("the test names %d features of %d", len(want), policy.NumFeatures)
	}
	// An accelerator reader makes feature 5 the agent's own reading.
	withGPU := NewAssembler(Config{AccelMemFill: func() float64 { return 0.5 }}).Features(snap, 0, now)
	if g := withGPU[policy.FeatAccelMem]; g.Source != SourceAgent || g.Value != 0.5 {
		t.Errorf("accelerator feature %+v", g)
	}
}

// A signal whose eBPF probe is missing names the fallback that serves it,
// as the real collector reports it with eBPF off.
func TestMissingEBPFSourceNamesTheFallback(t *testing.T) {
	c, err := signals.New(signals.Config{}, signals.WithoutBPF(), signals.WithWindow(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var snap signals.Snapshot
	c.Snapshot(&snap)
	f := NewAssembler(Config{}).Features(&snap, 0, time.Now())
	for i, sig := range map[int]signals.Source{
		policy.FeatRunqP50: snap.RunQueue.Source, policy.FeatRunqP99: snap.RunQueue.Source,
		policy.FeatAcceptQueue: snap.Accept.Source, policy.FeatBlkioP99: snap.Blkio.Source,
		policy.FeatCPUUtil: snap.CPU.Source, policy.FeatNetOrSyscall: snap.TCP.Source,
	} {
		if f[i].Source == SourceEBPF || string(f[i].Source) != string(sig.Kind) {
			t.Errorf("feature %s source %q with eBPF off; the collector says %q (%s)", policy.FeatureNames[i], f[i].Source, sig.Kind, sig.Reason)
		}
	}
	// The procfs readers feed these whatever the kernel.
	if f[policy.FeatCPUUtil].Source != SourceProcfs || f[policy.FeatNetOrSyscall].Source != SourceProcfs {
		t.Errorf("cpu %q, net %q, want procfs", f[policy.FeatCPUUtil].Source, f[policy.FeatNetOrSyscall].Source)
	}
	// A hand-built snapshot: accept served by sock_diag, run queue by schedstat.
	hand := withSources(knownSnapshot(), signals.SourceProcfs, signals.SourceNetlink, signals.SourceEBPF,
		signals.SourceEBPF, signals.SourceEBPF, signals.SourceProcfs)
	h := NewAssembler(Config{}).Features(hand, 0, time.Now())
	if h[policy.FeatAcceptQueue].Source != SourceNetlink || h[policy.FeatRunqP99].Source != SourceProcfs {
		t.Errorf("accept %q, runq %q", h[policy.FeatAcceptQueue].Source, h[policy.FeatRunqP99].Source)
	}
}

// Feature 11 is the TCP retransmit fraction or the watched syscall p99:
// its source switches with its value.
func TestNetOrSyscallSourceFollowsTheSwitch(t *testing.T) {
	snap := withSources(knownSnapshot(), signals.SourceEBPF, signals.SourceEBPF, signals.SourceEBPF,
		signals.SourceNone, signals.SourceProcfs, signals.SourceProcfs)
	now := time.Now()
	tcp := NewAssembler(Config{}).Features(snap, 0, now)[policy.FeatNetOrSyscall]
	sys := NewAssembler(Config{SyscallFeature: true}).Features(snap, 0, now)[policy.FeatNetOrSyscall]
	if tcp.Source != SourceProcfs || sys.Source != SourceNone {
		t.Fatalf("feature 11 sources: retransmits %q, syscalls %q; want procfs, none", tcp.Source, sys.Source)
	}
	// knownSnapshot: 1% retransmits reads 0.2; a 2 ms syscall p99 reads log(2000)/log(1e6).
	if tcp.Value != 0.2 || sys.Value == tcp.Value {
		t.Fatalf("feature 11 values: retransmits %v, syscalls %v", tcp.Value, sys.Value)
	}
	snap.Syscall.Source.Kind = signals.SourceEBPF
	if s := NewAssembler(Config{SyscallFeature: true}).Features(snap, 0, now)[policy.FeatNetOrSyscall]; s.Source != SourceEBPF {
		t.Fatalf("watched syscalls from eBPF: feature 11 source %q", s.Source)
	}
}

// BlindKernel (the agent's --ablate kernel) holds exactly the kernel
// features at their neutral values, sourced by nothing, whatever the
// snapshot says; every other feature is the one a seeing assembler makes.
func TestBlindKernelNeutralisesTheKernelFeaturesAlone(t *testing.T) {
	now := time.Unix(1000, 0)
	snap := withSources(knownSnapshot(), signals.SourceEBPF, signals.SourceNetlink, signals.SourceProcfs,
		signals.SourceEBPF, signals.SourceEBPF, signals.SourceProcfs)
	seeing := NewAssembler(Config{Workers: 4}).Features(snap, 4, now)
	blind := NewAssembler(Config{Workers: 4, BlindKernel: true}).Features(snap, 4, now)
	kernel := map[int]bool{}
	for _, f := range policy.KernelFeatures {
		kernel[f] = true
	}
	moved := 0
	for i := range blind {
		switch {
		case kernel[i]:
			if blind[i] != (Feature{Value: policy.Neutral[i], Source: SourceNone}) {
				t.Errorf("blind %s = %+v, want neutral %v from none", policy.FeatureNames[i], blind[i], policy.Neutral[i])
			}
			if seeing[i].Value != policy.Neutral[i] {
				moved++
			}
		case blind[i] != seeing[i]:
			t.Errorf("blind %s = %+v, the seeing assembler's %+v", policy.FeatureNames[i], blind[i], seeing[i])
		}
	}
	if moved == 0 {
		t.Fatal("the snapshot leaves every kernel feature neutral: the test shows nothing")
	}
}
