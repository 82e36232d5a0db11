package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/triage-agent/triage/policy"
)

func TestEnsembleIsTheMeanOfItsMembers(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	members := []*policy.MLP{newMLP(rng, []int{7, 5}), newMLP(rng, []int{7, 5}), newMLP(rng, []int{4, 9})}
	for _, m := range members { // non-zero biases, so they are checked too
		for li := range m.Layers {
			for i := range m.Layers[li].B {
				m.Layers[li].B[i] = float32(rng.NormFloat64())
			}
		}
	}
	ens := EnsembleMLP(members)
	if err := ens.Validate(); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 100; k++ {
		var s policy.State
		for i := range s {
			s[i] = float32(rng.Float64())
		}
		var want, q, got [policy.NumActions]float32
		for _, m := range members {
			m.Forward(&s, &q, nil)
			for a := range q {
				want[a] += q[a] / float32(len(members))
			}
		}
		ens.Forward(&s, &got, nil)
		for a := range got {
			if math.Abs(float64(got[a]-want[a])) > 1e-5 {
				t.Fatalf("state %d action %d: ensemble %v, mean of members %v", k, a, got[a], want[a])
			}
		}
	}
}
