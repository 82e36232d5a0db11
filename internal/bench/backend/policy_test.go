package backend

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
	"github.com/triage-agent/triage/wire"
)

func TestPolicyDecidesWithTheNodeState(t *testing.T) {
	d := policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata())
	b := NewPolicy(d, nil)
	tasks := []*wire.Task{{Id: 7, SlaMs: 20, CostMs: 3}, {Id: 8, SlaMs: 2000}}
	decs, model, epoch, err := b.Decide(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	if model != d.Version() || epoch != 0 || len(decs) != 2 {
		t.Fatalf("model %q epoch %d, %d decisions", model, epoch, len(decs))
	}
	for i, dec := range decs {
		if dec.Id != tasks[i].Id || len(dec.Q) != policy.NumActions {
			t.Fatalf("decision %d: %+v", i, dec)
		}
		if best := slices.Index(dec.Q, slices.Max(dec.Q)); uint32(best) != dec.Priority {
			t.Errorf("decision %d: priority %d, the highest Q is at %d (%v)", i, dec.Priority, best, dec.Q)
		}
	}
	// A new snapshot: its node features reach the model, the task's own
	// features (its SLA, cost and class, and the features relative to its
	// SLA) still come from the descriptor, and its epoch comes back.
	node := make([]float32, policy.NumFeatures)
	for i := range node {
		node[i] = 0.75
	}
	seen := &train.RecordingDecider{Decider: d}
	b = NewPolicy(seen, &wire.NodeState{Epoch: 5, Features: node, Model: d.Version()})
	if _, _, epoch, err = b.Decide(context.Background(), tasks); err != nil || epoch != 5 {
		t.Fatalf("epoch %d, %v", epoch, err)
	}
	nan := math.NaN()
	descriptorOnly := policy.Vector(&policy.Inputs{
		SLAMs: 20, CostMs: 3, QueueLen: nan, Workers: nan, ClassP50Ms: nan, ClassP99Ms: nan,
		AccelMemFill: nan, RunqP50Us: nan, RunqP99Us: nan, AcceptQueueFill: nan, BlkioP99Us: nan,
		CPUUtil: nan, RetransFraction: nan, SyscallP99Us: nan, WaitP50Ms: nan, WaitP99Ms: nan,
	})
	for f, v := range seen.States[0] {
		isNode := f == policy.FeatQueue || (f >= policy.FeatAccelMem && f <= policy.FeatWaitP99)
		if isNode && v != 0.75 || !isNode && v != descriptorOnly[f] {
			t.Errorf("feature %s = %v: node features come from the snapshot, task features from the descriptor (%v)", policy.FeatureNames[f], v, descriptorOnly[f])
		}
	}
	if seen.States[0][policy.FeatCostOverSLA] == policy.Neutral[policy.FeatCostOverSLA] {
		t.Errorf("a 3 ms task with a 20 ms SLA: cost over SLA %v, the neutral value", seen.States[0][policy.FeatCostOverSLA])
	}
}

func TestPolicyChecksOutcomes(t *testing.T) {
	b := NewPolicy(policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata()), nil)
	var seen int
	b.OnOutcomes = func(o []*wire.Outcome) { seen += len(o) }
	good := []*wire.Outcome{{Id: 1, LatencyMs: 4, ServiceMs: 3, SlaMet: true}, {Id: 2, LatencyMs: 90, ServiceMs: 80}}
	if err := b.ReportOutcomes(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	if err := b.ReportOutcomes(context.Background(), []*wire.Outcome{{Id: 3, LatencyMs: float32(math.NaN())}}); err == nil {
		t.Error("a NaN latency was accepted")
	}
	if b.Outcomes() != 2 || seen != 2 {
		t.Errorf("%d outcomes counted, %d passed on; want 2 and 2", b.Outcomes(), seen)
	}
}
