package train

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// tinyTrain is a DQN run small enough for a unit test: a 20 s, two-class
// scenario at about 1.2 load, where the order matters.
func tinyTrain(t *testing.T, seed int64) (*Scenario, *TrainResult) {
	t.Helper()
	sc := tinyScenario(t, 80)
	res, err := TrainDQN([]*Scenario{sc}, DQNConfig{
		Seed: seed, Episodes: 6, Hidden: []int{16, 16}, Warmup: 500, TargetSync: 100, EvalEvery: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sc, res
}

// Six episodes of a 16-wide network learn the order on most seeds, not
// every one (seed 3 once stayed at the random policy's level after the
// calibration was measured again), so the median of three training seeds
// must beat a random policy clearly.
func TestTinyDQNBeatsRandom(t *testing.T) {
	var got []float64
	random := 0.0
	for _, seed := range []int64{1, 2, 3} {
		sc, res := tinyTrain(t, seed)
		if err := res.Net.Validate(); err != nil {
			t.Fatal(err)
		}
		if len(res.Curve) != 6 {
			t.Fatalf("learning curve has %d points, want 6", len(res.Curve))
		}
		ev, err := Evaluate(sc, 999, &MLPPolicy{Label: "dqn", Net: res.Net}, &randomPolicy{seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Policies["dqn"].SLAAttainment)
		random = ev.Policies["random"].SLAAttainment
	}
	slices.Sort(got)
	t.Logf("dqn %.4f (seeds 1-3, sorted), random %.4f SLA attainment", got, random)
	if med := got[1]; med <= random+0.02 {
		t.Fatalf("the median DQN's SLA attainment %.4f is not clearly above a random policy's %.4f", med, random)
	}
}

func TestDQNIsDeterministic(t *testing.T) {
	_, a := tinyTrain(t, 9)
	_, b := tinyTrain(t, 9)
	ba, err := policy.MarshalONNX(a.Net, policy.CurrentMetadata("t", "t"))
	if err != nil {
		t.Fatal(err)
	}
	bb, _ := policy.MarshalONNX(b.Net, policy.CurrentMetadata("t", "t"))
	if !bytes.Equal(ba, bb) {
		t.Fatal("the same seed gave different models")
	}
	_, c := tinyTrain(t, 10)
	bc, _ := policy.MarshalONNX(c.Net, policy.CurrentMetadata("t", "t"))
	if bytes.Equal(ba, bc) {
		t.Fatal("different seeds gave the same model")
	}
}

type randomPolicy struct {
	seed uint64
	x    uint64
}

func (r *randomPolicy) Name() string { return "random" }
func (r *randomPolicy) Assign(t *Task, _ *NodeView) (int, float64, error) {
	// splitmix64: deterministic and independent of the simulator's streams.
	r.x += 0x9e3779b97f4a7c15 + r.seed
	z := r.x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int(z % policy.NumActions), t.DeadlineMs(), nil
}

func TestHarmChargesLongTasksThatOvertake(t *testing.T) {
	sc := tinyScenario(t, 80)
	out, err := Run(sc, levelByClass{}, SimConfig{TrackHarm: true})
	if err != nil {
		t.Fatal(err)
	}
	var longH, shortH float64
	var nl, ns int
	for i := range out {
		if out[i].Class == 1 {
			longH += out[i].Harm
			nl++
		} else {
			shortH += out[i].Harm
			ns++
		}
	}
	if longH/float64(nl) <= shortH/float64(ns) {
		t.Fatalf("long tasks jumping the queue were charged %.4f each, short ones %.4f", longH/float64(nl), shortH/float64(ns))
	}
}

// The met bonus pays a task that met its SLA, by its class weight, on top
// of the training reward, and nothing to one that missed; 0 leaves the
// training reward as it is.
func TestMetBonusPaysTheTasksThatMetTheirSLA(t *testing.T) {
	met := Outcome{Task: Task{Weight: 2}, Met: true, Reward: 0.25, Harm: 0.1, Blame: 0.01}
	missed := Outcome{Task: Task{Weight: 2}, Met: false, Reward: -0.5, Harm: 0.1, Blame: 0.01}
	for _, c := range []struct {
		bonus       float64
		met, missed float64
	}{
		{0, 0.25 - 0.1 - 6*0.01, -0.5 - 0.1 - 6*0.01},
		{0.3, 0.25 - 0.1 - 6*0.01 + 0.6, -0.5 - 0.1 - 6*0.01},
	} {
		tr := &trainer{cfg: DQNConfig{HarmWeight: 1, BlameWeight: 6, MetBonus: c.bonus}}
		if got := tr.reward(&met); math.Abs(float64(got)-c.met) > 1e-6 {
			t.Errorf("bonus %v: a met task's reward %v, want %v", c.bonus, got, c.met)
		}
		if got := tr.reward(&missed); math.Abs(float64(got)-c.missed) > 1e-6 {
			t.Errorf("bonus %v: a missed task's reward %v, want %v", c.bonus, got, c.missed)
		}
	}
}
