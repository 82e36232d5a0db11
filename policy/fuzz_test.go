package policy

import (
	"math/rand/v2"
	"testing"
)

// FuzzReadONNX feeds arbitrary bytes to the reader: it may refuse them, but
// must never panic, and what it accepts must be a valid MLP that runs.
// `go test -fuzz FuzzReadONNX ./policy` explores beyond the seeds.
func FuzzReadONNX(f *testing.F) {
	f.Add(mustMarshal(f, BootstrapMLP(), BootstrapMetadata()))
	f.Add(mustMarshal(f, randomMLP(rand.New(rand.NewPCG(9, 9)), 5, 3), testMetadata("fuzz")))
	ens := testMetadata("fuzz-ensemble")
	ens.Ranges = &FeatureRanges{}
	ens.Ranges.Observe(Neutral)
	f.Add(mustMarshal(f, randomEnsemble(rand.New(rand.NewPCG(9, 10)), 3, 4), ens))
	f.Add(foreignModel(true))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := ReadONNX(b)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid MLP: %v", err)
		}
		if _, err := ReadMetadata(b); err != nil {
			t.Fatalf("ReadONNX accepted what ReadMetadata refuses: %v", err)
		}
		var q [NumActions]float32
		m.Forward(&Neutral, &q, nil)
	})
}
