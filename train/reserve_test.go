package train

import (
	"testing"

	"github.com/triage-agent/triage/policy"
)

// backgroundAsking puts every task in the background and asks the
// executor for share of the workers to be left free.
type backgroundAsking struct{ share float64 }

func (p backgroundAsking) Name() string { return "background" }
func (p backgroundAsking) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return 0, t.DeadlineMs(), nil
}
func (p backgroundAsking) Reserve(*NodeView) float64 { return p.share }

// The executor honours the reserve a Reserver asks for: with 8 workers and
// every task in the background, at most 8 − 2 run at once on the calm
// reserve, 8 − 4 on the contended one; a policy that asks nothing gets the
// calm one.
func TestSimulatorHoldsBackTheReserveItsPolicyAsksFor(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"reserve","seed":3,"duration_s":5,"workers":8,
	 "arrival":{"process":"poisson","rate_per_s":400},
	 "classes":[{"name":"a","share":1,"sla_ms":1000,"cost_ms":{"dist":"exponential","mean":50}}]}`)
	for _, c := range []struct {
		p    Policy
		most int
	}{
		{constLevel(0), 6},
		{backgroundAsking{policy.CalmReserve}, 6},
		{backgroundAsking{policy.ContendedReserve}, 4},
	} {
		out, err := Run(sc, c.p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if got := MostAtOnce(out, 0); got != c.most {
			t.Errorf("%T %v: at most %d in service, want %d", c.p, c.p, got, c.most)
		}
	}
}

// The model's rows ask for the reserve of the state they see: the
// contended one on a contended node, and the calm one when blind to the
// kernel (dqn-ablated), as the agent with --ablate kernel sends.
func TestModelRowsAskForTheReserveOfWhatTheySee(t *testing.T) {
	in := policy.Inputs{RunqP99Us: 5 * policy.ContendedRunqP99Us, SLAMs: 20, CostMs: 2}
	v := &NodeView{State: policy.Vector(&in)}
	sess := policy.NewGoDecider(constNet([policy.NumActions]float32{4: 1}), policy.CurrentMetadata("test", ""))
	seeing := &DeciderPolicy{Label: "dqn", Decider: sess}
	blind := &DeciderPolicy{Label: "dqn-ablated", Decider: &AblatedDecider{Decider: sess, Off: policy.KernelFeatures}}
	if got := seeing.Reserve(v); got != policy.ContendedReserve {
		t.Errorf("seeing the kernel: %v, want %v", got, policy.ContendedReserve)
	}
	if got := blind.Reserve(v); got != policy.CalmReserve {
		t.Errorf("blind to the kernel: %v, want %v", got, policy.CalmReserve)
	}
}
