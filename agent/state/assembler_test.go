package state

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/policy"
)

func knownSnapshot() *signals.Snapshot {
	var s signals.Snapshot
	s.RunQueue.Latency = signals.Latency{P50Us: 20, P99Us: 5000, Count: 100}
	s.Accept.Fill = 0.5
	s.Blkio.Latency = signals.Latency{P50Us: 80, P99Us: 400, Count: 30}
	s.CPU.Util = 0.75
	s.TCP.RetransFraction = 0.01
	s.Syscall.Latency = signals.Latency{P50Us: 3, P99Us: 2000, Count: 10}
	return &s
}

func TestBuildTaskMatchesPolicyVector(t *testing.T) {
	a := NewAssembler(Config{Workers: 10})
	for i := 0; i < 100; i++ {
		a.Classes().Observe("web", 20)
	}
	now := time.Now()
	for _, w := range []float64{1, 2, 3, 4} {
		a.ObserveWait(now, w)
	}
	node := a.NodeInputs(knownSnapshot(), now)
	d := &Descriptor{Class: "web", SLAMs: 100, CostMs: 15}
	got := a.BuildTask(&node, d, 30, now)
	want := policy.Vector(&policy.Inputs{
		QueueLen: 30, Workers: 10, SLAMs: 100, CostMs: 15,
		ClassP50Ms: 20, ClassP99Ms: 20,
		RunqP50Us: 20, RunqP99Us: 5000, AcceptQueueFill: 0.5, BlkioP99Us: 400,
		CPUUtil: 0.75, RetransFraction: 0.01, SyscallP99Us: 2000,
		WaitP50Ms: 2, WaitP99Ms: 4,
	})
	if got != want {
		t.Fatalf("BuildTask = %v\nwant        %v", got, want)
	}
	// 3 per worker: log2(4)/log2(65); an SLA of 100 ms: log10(1000)/6.
	if got[policy.FeatQueue] != float32(2/math.Log2(65)) || got[policy.FeatSLA] != 0.5 || got[policy.FeatAcceptQueue] != 0.5 || got[policy.FeatCPUUtil] != 0.75 {
		t.Fatalf("queue/SLA/accept/cpu features %v %v %v %v", got[policy.FeatQueue], got[policy.FeatSLA], got[policy.FeatAcceptQueue], got[policy.FeatCPUUtil])
	}
	// Build (no queue known) is the same vector with feature 0 neutral.
	want[policy.FeatQueue] = policy.Neutral[policy.FeatQueue]
	if b := a.Build(d, now, knownSnapshot()); b != want {
		t.Fatalf("Build = %v\nwant    %v", b, want)
	}
}

func TestNodeInputsLeaveTaskFieldsUnknown(t *testing.T) {
	a := NewAssembler(Config{SyscallFeature: true, AccelMemFill: func() float64 { return 0.25 }})
	in := a.NodeInputs(knownSnapshot(), time.Now())
	for name, v := range map[string]float64{"QueueLen": in.QueueLen, "SLAMs": in.SLAMs, "CostMs": in.CostMs, "ClassP50Ms": in.ClassP50Ms, "WaitP50Ms": in.WaitP50Ms} {
		if !math.IsNaN(v) {
			t.Errorf("node inputs %s = %v, want NaN (unknown)", name, v)
		}
	}
	if !in.SyscallFeature || in.AccelMemFill != 0.25 || in.SyscallP99Us != 2000 {
		t.Fatalf("node inputs %+v", in)
	}
	// Completing them for a task does not change the node part.
	task := a.TaskInputs(&in, &Descriptor{Class: "x"}, 0, time.Now())
	if task.RunqP99Us != in.RunqP99Us || task.QueueLen != 0 || task.Workers != float64(runtime.NumCPU()) {
		t.Fatalf("task inputs %+v", task)
	}
}

func TestBuildIsNaNSafe(t *testing.T) {
	a := NewAssembler(Config{})
	var s signals.Snapshot
	nan := signals.Num(math.NaN())
	s.RunQueue.Latency = signals.Latency{P50Us: nan, P99Us: nan}
	s.Accept.Fill, s.CPU.Util, s.TCP.RetransFraction = nan, nan, nan
	s.Blkio.Latency = signals.Latency{P50Us: nan, P99Us: nan}
	cases := []*Descriptor{
		nil,
		{Class: "never-seen"},
		{SLAMs: math.NaN(), CostMs: math.Inf(1)},
		{SLAMs: -1, CostMs: -3},
	}
	for _, d := range cases {
		for _, snap := range []*signals.Snapshot{nil, &s} {
			v := a.Build(d, time.Now(), snap)
			for i, x := range v {
				if math.IsNaN(float64(x)) || x < 0 || x > 1 {
					t.Fatalf("desc %+v feature %d = %v", d, i, x)
				}
				if slices.Contains(policy.KernelFeatures, i) && i != policy.FeatCPUUtil && snap != nil && x != policy.Neutral[i] {
					t.Errorf("unknown kernel feature %s = %v, want neutral %v", policy.FeatureNames[i], x, policy.Neutral[i])
				}
			}
		}
	}
}

func TestMeanCostFallback(t *testing.T) {
	a := NewAssembler(Config{})
	a.Classes().Observe("batch", 40)
	a.Classes().Observe("batch", 60)
	now := time.Unix(0, 0)
	d := &Descriptor{Class: "batch", SLAMs: 10}
	in := a.Inputs(d, now, nil)
	if in.CostMs != 50 {
		t.Errorf("cost without descriptor value = %v, want class mean 50", in.CostMs)
	}
}

// Waits are the node's recent queueing delays: broken reports are no
// sample, and a node with no recent outcome has none.
func TestObserveWait(t *testing.T) {
	a := NewAssembler(Config{})
	now := time.Now()
	for _, w := range []float64{math.NaN(), -1, math.Inf(1)} {
		a.ObserveWait(now, w)
	}
	if in := a.NodeInputs(nil, now); !math.IsNaN(in.WaitP50Ms) {
		t.Fatalf("broken waits read as %v", in.WaitP50Ms)
	}
	a.ObserveWait(now, 8)
	if in := a.NodeInputs(nil, now); in.WaitP50Ms != 8 || in.WaitP99Ms != 8 {
		t.Fatalf("one wait of 8: %v %v", in.WaitP50Ms, in.WaitP99Ms)
	}
	if in := a.NodeInputs(nil, now.Add(time.Hour)); !math.IsNaN(in.WaitP50Ms) {
		t.Fatalf("an hour later: %v", in.WaitP50Ms)
	}
}

func BenchmarkBuild(b *testing.B) {
	a := NewAssembler(Config{})
	a.Classes().Observe("web", 10)
	s := knownSnapshot()
	d := &Descriptor{Class: "web", SLAMs: 50}
	now := time.Now()
	node := a.NodeInputs(s, now)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = a.BuildTask(&node, d, 7, now)
	}
}

// Feature 20 is the share of the tasks decided before whose SLA is under
// half the task's own: unknown (neutral) before any, and for a task
// without an SLA; the node state (no task) leaves it neutral.
func TestTighterShareFollowsTheDecidedTasks(t *testing.T) {
	a := NewAssembler(Config{Workers: 4})
	now := time.Now()
	node := a.NodeInputs(nil, now)
	web := &Descriptor{Class: "web", SLAMs: 200}
	if s := a.BuildTask(&node, web, 0, now); s[policy.FeatTighterShare] != policy.Neutral[policy.FeatTighterShare] {
		t.Fatalf("before any decision: %v, want neutral", s[policy.FeatTighterShare])
	}
	for _, sla := range []float64{20, 20, 20, 200, 0} { // the SLA-less task is not counted
		a.ObserveDecided(sla)
	}
	if got := a.BuildTask(&node, web, 0, now)[policy.FeatTighterShare]; got != 0.75 {
		t.Fatalf("200 ms task after three 20 ms and one 200 ms: %v, want 0.75", got)
	}
	if got := a.BuildTask(&node, &Descriptor{Class: "rt", SLAMs: 20}, 0, now)[policy.FeatTighterShare]; got != 0 {
		t.Fatalf("20 ms task: %v, want 0", got)
	}
	if got := a.BuildTask(&node, &Descriptor{Class: "web"}, 0, now)[policy.FeatTighterShare]; got != policy.Neutral[policy.FeatTighterShare] {
		t.Fatalf("task without an SLA: %v, want neutral", got)
	}
	if f := a.Features(nil, 0, now); f[policy.FeatTighterShare].Value != policy.Neutral[policy.FeatTighterShare] || f[policy.FeatTighterShare].Source != SourceAgent {
		t.Fatalf("node state's feature 20: %+v", f[policy.FeatTighterShare])
	}
}
