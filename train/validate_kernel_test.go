package train

import (
	"math"
	"testing"

	"github.com/triage-agent/triage/internal/testmodel"
	"github.com/triage-agent/triage/policy"
)

// With ValidationKernelWeight w, a checkpoint's validation score gains w
// times its kernel share on each validation scenario with interference:
// its SLA attainment minus the same network's with the kernel features
// neutral, measured here through the evaluation's own path (a Go decider
// behind AblatedDecider), in the trainer's order (trainerOrder). The
// shipped model reads the kernel on intf-io-backup, so the share is
// positive there; on a scenario without interference the weight changes
// nothing.
func TestValidationKernelWeightAddsTheKernelShare(t *testing.T) {
	sess := testmodel.Default(t, policy.Config{})
	net := sess.MLP()
	for _, c := range []struct {
		file       string
		interferes bool
	}{{"intf-io-backup", true}, {"train-a-light", false}} {
		sc, err := LoadScenario("../testdata/scenarios/" + c.file + ".json")
		if err != nil {
			t.Fatal(err)
		}
		sc = capDuration(sc, 30)
		off, err := newValidator([]*Scenario{sc}, DQNConfig{}.withDefaults())
		if err != nil {
			t.Fatal(err)
		}
		on, err := newValidator([]*Scenario{sc}, DQNConfig{ValidationKernelWeight: 2}.withDefaults())
		if err != nil {
			t.Fatal(err)
		}
		s0, err := off.score(net)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := on.score(net)
		if err != nil {
			t.Fatal(err)
		}
		if !c.interferes {
			if s2 != s0 {
				t.Errorf("%s has no interference, yet the weight moved the score %v → %v", c.file, s0, s2)
			}
			continue
		}
		sla := func(p Policy) float64 {
			out, err := RunTasks(sc, off.tasks[0], p, SimConfig{Seed: off.seeds[0]})
			if err != nil {
				t.Fatal(err)
			}
			return Summarise(sc, out).SLAAttainment
		}
		share := sla(&MLPPolicy{Label: "dqn", Net: net}) -
			sla(unshortened{&DeciderPolicy{Label: "blind", Decider: &AblatedDecider{Decider: policy.NewGoDecider(net, sess.Metadata()), Off: policy.KernelFeatures}, Order: trainerOrder}})
		t.Logf("%s: score %.4f without the weight, %.4f with weight 2; kernel share %.4f", c.file, s0, s2, share)
		if share <= 0 {
			t.Fatalf("setup: the shipped model's kernel share on %s is %.4f, want it positive", c.file, share)
		}
		if math.Abs(s2-s0-2*share) > 1e-9 {
			t.Errorf("%s: the weight added %.6f to the score, want 2 × the kernel share %.6f", c.file, s2-s0, share)
		}
	}
}

// unshortened is a DeciderPolicy without the agent's short limit
// (ShortServer): the trainer's episodes and its validation do not use it,
// so neither does the share they are checked against.
type unshortened struct{ p *DeciderPolicy }

func (u unshortened) Name() string { return u.p.Name() }
func (u unshortened) Assign(t *Task, v *NodeView) (int, float64, error) {
	return u.p.Assign(t, v)
}
func (u unshortened) Reserve(v *NodeView) float64 { return u.p.Reserve(v) }
func (u unshortened) answerOrder() AnswerOrder    { return u.p.answerOrder() }
