package train_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/triage-agent/triage/train"
)

// defaultSuiteDigest pins the default draw: the shipped model was trained
// on train.Generate's suites (`make model`), so a change to what a seed
// draws changes what the model is rebuilt from. Change it only with the
// model, and say so in docs/training.md.
const defaultSuiteDigest = "fe0a2b56352207d8832ef8d8e5ade0dd8f19d0246856c185ad7225458e4cea25"

func suiteDigest(t *testing.T, scs []*train.Scenario) string {
	t.Helper()
	b, err := json.Marshal(scs)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func TestGenerateDefaultSuiteIsUnchanged(t *testing.T) {
	if got := suiteDigest(t, train.Generate(1, 40, train.GenConfig{})); got != defaultSuiteDigest {
		t.Fatalf("the default suite of seed 1 drew %s, want %s: the generator's draw changed", got, defaultSuiteDigest)
	}
	// The default workers named outright draw the same suite.
	if got := suiteDigest(t, train.Generate(1, 40, train.GenConfig{Workers: train.DefaultGenWorkers})); got != defaultSuiteDigest {
		t.Fatalf("DefaultGenWorkers named: %s, want the default suite's %s", got, defaultSuiteDigest)
	}
}

func TestGenerateDrawsTheWorkersAsked(t *testing.T) {
	asked := []int{24, 32, 48, 64}
	big := train.Generate(7, 30, train.GenConfig{Workers: asked})
	small := train.Generate(7, 30, train.GenConfig{})
	for i, sc := range big {
		if !slices.Contains(asked, sc.Workers) {
			t.Errorf("%s: %d workers, want one of %v", sc.Name, sc.Workers, asked)
		}
		if err := sc.Validate(); err != nil {
			t.Errorf("%s: %v", sc.Name, err)
		}
		// The same randomness is consumed, so the node's size is the only
		// first choice that differs: the class mix (how many classes, and
		// their shares, which the stretch of a large node's costs leaves
		// alone) is the default draw's.
		if len(sc.Classes) != len(small[i].Classes) {
			t.Errorf("%s: %d classes, the default draw %d", sc.Name, len(sc.Classes), len(small[i].Classes))
			continue
		}
		for c := range sc.Classes {
			if sc.Classes[c].Share != small[i].Classes[c].Share {
				t.Errorf("%s class %d: share %v, the default draw %v", sc.Name, c, sc.Classes[c].Share, small[i].Classes[c].Share)
			}
		}
	}
	if suiteDigest(t, big) == suiteDigest(t, small) {
		t.Fatal("the larger nodes drew the default suite")
	}
}

func TestGenConfigValidate(t *testing.T) {
	long := make([]int, 65)
	for i := range long {
		long[i] = 4
	}
	for _, bad := range [][]int{{0}, {-3}, {4, 5000}, long} {
		if err := (train.GenConfig{Workers: bad}).Validate(); !errors.Is(err, train.ErrBadGenConfig) {
			t.Errorf("workers %v: %v, want ErrBadGenConfig", bad[:min(len(bad), 3)], err)
		}
	}
	for _, good := range [][]int{nil, {1}, {4096}, train.DefaultGenWorkers} {
		if err := (train.GenConfig{Workers: good}).Validate(); err != nil {
			t.Errorf("workers %v: %v", good, err)
		}
	}
	// Generate never draws from a list Validate refuses.
	for _, sc := range train.Generate(3, 5, train.GenConfig{Workers: []int{0}}) {
		if !slices.Contains(train.DefaultGenWorkers, sc.Workers) {
			t.Errorf("%s: %d workers from a refused list", sc.Name, sc.Workers)
		}
	}
}
