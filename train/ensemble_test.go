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
	if ens.Members != len(members) {
		t.Fatalf("the ensemble says %d members, want %d", ens.Members, len(members))
	}
	got := make([]float32, policy.NumActions*len(members))
	for k := 0; k < 100; k++ {
		var s policy.State
		for i := range s {
			s[i] = float32(rng.Float64())
		}
		var want, q, mean [policy.NumActions]float32
		ens.ForwardMembers(&s, &mean, got, nil)
		for j, m := range members {
			// Member j's Q-values sit at [j*5, j*5+5), exactly its own.
			m.Forward(&s, &q, nil)
			for a := range q {
				if d := math.Abs(float64(got[j*policy.NumActions+a] - q[a])); d > 1e-5 {
					t.Fatalf("state %d member %d action %d: in the ensemble %v, alone %v", k, j, a, got[j*policy.NumActions+a], q[a])
				}
				want[a] += q[a] / float32(len(members))
			}
		}
		for a := range mean {
			if math.Abs(float64(mean[a]-want[a])) > 1e-5 {
				t.Fatalf("state %d action %d: ensemble %v, mean of members %v", k, a, mean[a], want[a])
			}
		}
	}
	if one := EnsembleMLP(members[:1]); one.Members > 1 || one.Validate() != nil {
		t.Errorf("an ensemble of one is a plain network: members %d, %v", one.Members, one.Validate())
	}
}
