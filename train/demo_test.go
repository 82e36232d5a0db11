package train

import (
	"math/rand/v2"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// The DQfD margin loss alone, applied to one state, must make the
// demonstrator's action the greedy one by at least the margin.
func TestDemoLossMakesTeacherActionLeadByMargin(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := DQNConfig{DemoMargin: 0.1}.withDefaults()
	tr := &trainer{cfg: cfg, rng: rng, online: newMLP(rng, []int{16})}
	tr.learn = newLearner(tr.online, 1e-2)
	var s policy.State
	for i := range s {
		s[i] = rng.Float32()
	}
	// The teacher picks the action the untrained network values least.
	q := tr.learn.forward(&s)
	teacher := 0
	for a, v := range q {
		if v < q[teacher] {
			teacher = a
		}
	}
	for range 500 {
		tr.learn.g.zero()
		q = tr.learn.forward(&s)
		tr.demoLoss(q, teacher)
		tr.learn.adam.step(tr.online, tr.learn.g, 1, 0)
	}
	q = tr.learn.forward(&s)
	for a, v := range q {
		if a != teacher && q[teacher] < v+0.1-1e-3 {
			t.Fatalf("after the margin loss Q = %v: action %d is within the margin of the teacher's %d", q, a, teacher)
		}
	}
}

// With demonstration episodes only and a margin far above the reward
// differences, the trained network must reproduce the demonstrator
// (static-class) on states it never trained on.
func TestDQfDImitatesTheDemonstrator(t *testing.T) {
	sc := tinyScenario(t, 80)
	res, err := TrainDQN([]*Scenario{sc}, DQNConfig{
		Seed: 4, Episodes: 4, Hidden: []int{16, 16}, Warmup: 500, TargetSync: 100, EvalEvery: 4,
		DemoEpisodes: 4, DemoMargin: 2, DemoWeight: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	teacher := NewStaticClass(sc)
	out, err := Run(sc, teacher, SimConfig{Seed: 777})
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	var q [policy.NumActions]float32
	for i := range out {
		res.Net.Forward(&out[i].State, &q, nil)
		if policy.Argmax(&q) == out[i].Level {
			agree++
		}
	}
	frac := float64(agree) / float64(len(out))
	t.Logf("greedy network agrees with static-class on %.3f of %d states", frac, len(out))
	if frac < 0.9 {
		t.Fatalf("DQfD network agrees with its demonstrator on only %.3f of states", frac)
	}
}

func TestValidationSeedsAddRuns(t *testing.T) {
	sc := tinyScenario(t, 80)
	v, err := newValidator([]*Scenario{sc}, DQNConfig{ValidationSeeds: 3}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.tasks) != 3 {
		t.Fatalf("%d validation runs, want 3", len(v.tasks))
	}
	if v.seeds[0] == v.seeds[1] || v.seeds[1] == v.seeds[2] || v.seeds[0] == v.seeds[2] {
		t.Fatalf("validation seeds repeat: %v", v.seeds)
	}
	one, err := newValidator([]*Scenario{sc}, DQNConfig{}.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if one.seeds[0] != v.seeds[0] {
		t.Fatalf("the first validation seed changed with ValidationSeeds: %d vs %d", one.seeds[0], v.seeds[0])
	}
}
