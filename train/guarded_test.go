package train

import (
	"fmt"
	"testing"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/guard"
)

// constNet is a network of len(rows) members whose Q-values are the rows
// whatever the state (zero weights), so how sure it is is known.
func constNet(rows ...[policy.NumActions]float32) *policy.MLP {
	k := len(rows)
	l := policy.Dense{In: policy.NumFeatures, Out: policy.NumActions * k,
		W: make([]float32, policy.NumFeatures*policy.NumActions*k), B: make([]float32, policy.NumActions*k)}
	for j, r := range rows {
		copy(l.B[j*policy.NumActions:], r[:])
	}
	m := &policy.MLP{Layers: []policy.Dense{l}}
	if k > 1 {
		m.Members = k
	}
	return m
}

func sameRun(t *testing.T, what string, a, b []Outcome) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d and %d tasks", what, len(a), len(b))
	}
	for i := range a {
		if a[i].Level != b[i].Level || a[i].Key != b[i].Key || a[i].FinishMs != b[i].FinishMs {
			t.Fatalf("%s: task %d: level %d key %v finish %v, want level %d key %v finish %v", what, i,
				a[i].Level, a[i].Key, a[i].FinishMs, b[i].Level, b[i].Key, b[i].FinishMs)
		}
	}
}

// asServed is a controller as the agent serves its levels: with the
// background reserve and the short and urgent limits the agent sends
// beside every decision, whoever took it (policy.Reserve of the node
// state, policy.ShortBackgroundMs, and policy.UrgentBackgroundSLAMs, which
// the simulator gives every ShortServer), and ordered within a level as the executor
// orders every answer (AdaptiveOrder, the default; the wire carries no
// key): what a guard that takes every task serves.
type asServed struct{ Controller }

func (c asServed) Reserve(v *NodeView) float64 { return seenReserve(v, nil) }

func (asServed) ShortBackgroundMs(v *NodeView) float64 { return servedShort(v) }

func (c asServed) Assign(t *Task, v *NodeView) (int, float64, error) {
	level, _, err := c.Controller.Assign(t, v)
	return level, AdaptiveOrder.Key(t), err
}

func (asServed) answerOrder() AnswerOrder { return AdaptiveOrder }

// Where the network is unsure of every task, the guarded policy runs
// exactly as its controller alone as the agent serves it (asServed): same levels, keys and finishes, every
// decision counted as the guard's. Where it is sure of every task, it runs
// exactly as the network alone. Either way the controller was told of
// every task.
func TestGuardedPolicyIsItsControllerWhereUnsureAndTheNetworkWhereSure(t *testing.T) {
	sc := tinyScenario(t, 200) // overload: the controllers shed
	meta := policy.CurrentMetadata("test", "")
	// Members choose 4 and 0; the mean chooses 4 with agreement 0.5.
	disputed := policy.NewGoDecider(constNet([policy.NumActions]float32{4: 1}, [policy.NumActions]float32{0: 0.9}), meta)
	// A model trained only on states of all ones: every state is outside.
	far := meta
	far.Ranges = &policy.FeatureRanges{}
	var ones policy.State
	for i := range ones {
		ones[i] = 1
	}
	far.Ranges.Observe(ones)
	outside := policy.NewGoDecider(constNet([policy.NumActions]float32{3: 1}), far)
	sure := policy.NewGoDecider(constNet([policy.NumActions]float32{3: 1}, [policy.NumActions]float32{3: 2, 1: 1}), meta)
	for _, name := range control.Names {
		c, err := control.New(name)
		if err != nil {
			t.Fatal(err)
		}
		alone, err := Run(sc, asServed{Controller{c}}, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []struct {
			d    policy.Decider
			why  guard.Reason
			runs int
		}{{disputed, guard.Disagree, 2}, {outside, guard.OutOfRange, 1}} {
			g, err := guard.Named(name, guard.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			p := NewGuardedPolicy("dqn", u.d, g)
			for range u.runs { // a second run starts afresh: Reset reaches the controller
				out, err := Run(sc, p, SimConfig{})
				if err != nil {
					t.Fatal(err)
				}
				sameRun(t, name+" guarding a network that is unsure ("+u.why.String()+")", out, alone)
			}
			if p.Counts[u.why] != u.runs*len(alone) || p.Guarded() != p.Decisions() {
				t.Errorf("%s: counts %v over %d runs of %d tasks, want every one %s", name, p.Counts, u.runs, len(alone), u.why)
			}
		}
		net, err := Run(sc, &DeciderPolicy{Label: "net", Decider: sure}, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		g, _ := guard.Named(name, guard.DefaultConfig())
		p := NewGuardedPolicy("dqn", sure, g)
		out, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		sameRun(t, name+" guarding a sure network", out, net)
		if p.Guarded() != 0 || p.Counts[guard.Network] != len(net) {
			t.Errorf("%s: counts %v, want all %d the network's", name, p.Counts, len(net))
		}
	}
}

// With a minimum advantage above what a sure network prefers its priority
// by, every task the controller levels otherwise is the controller's
// (slim_margin), and the run is the controller's own; below it the run is
// the network's.
func TestGuardedPolicyWithAMarginIsTheControllerWhereTheNetworkIsBarelyAhead(t *testing.T) {
	sc := tinyScenario(t, 200)
	meta := policy.CurrentMetadata("test", "")
	// Priority 3 by a Q of 1 over every other; reserve-rule never answers 3.
	sure := policy.NewGoDecider(constNet([policy.NumActions]float32{3: 1}), meta)
	alone, err := Run(sc, asServed{Controller{control.NewReserve(control.DefaultReserve)}}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	net, err := Run(sc, &DeciderPolicy{Label: "net", Decider: sure}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		margin float32
		want   []Outcome
		why    guard.Reason
	}{{2, alone, guard.SlimMargin}, {0.5, net, guard.Network}} {
		cfg := guard.DefaultConfig()
		cfg.MinAdvantage = c.margin
		g, err := guard.New(control.NewReserve(control.DefaultReserve), cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := NewGuardedPolicy("dqn", sure, g)
		out, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		sameRun(t, fmt.Sprintf("margin %v", c.margin), out, c.want)
		if p.Counts[c.why] != len(out) {
			t.Errorf("margin %v: counts %v, want all %d %s", c.margin, p.Counts, len(out), c.why)
		}
	}
}
