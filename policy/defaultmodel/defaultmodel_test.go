package defaultmodel

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/triage-agent/triage/policy"
)

var writeBootstrap = flag.Bool("write-bootstrap", false, "overwrite model.onnx with the hand-set bootstrap model (replaces a trained one)")

// TestMain regenerates model.onnx when asked (-write-bootstrap). The tests
// check the embedded copy, which picks the new file up at the next build.
func TestMain(m *testing.M) {
	flag.Parse()
	if *writeBootstrap {
		b, err := policy.MarshalONNX(policy.BootstrapMLP(), policy.BootstrapMetadata())
		if err == nil {
			err = os.WriteFile("model.onnx", b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "writing the bootstrap model:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// TestEmbeddedModelLoads runs the embedded model through ONNX Runtime and
// checks its schema, whichever model (bootstrap or trained) is embedded.
func TestEmbeddedModelLoads(t *testing.T) {
	b := Bytes()
	meta, err := policy.ReadMetadata(b)
	if err != nil {
		t.Fatalf("ReadMetadata: %v", err)
	}
	if err := policy.CheckSchema(meta); err != nil {
		t.Fatalf("CheckSchema: %v", err)
	}
	if meta.Version == "" {
		t.Error("embedded model has no version")
	}
	s, err := policy.LoadBytes(b, policy.Config{Device: policy.DeviceCPU})
	if err != nil {
		t.Fatalf("LoadBytes: %v\n(run `make ort` and set TRIAGE_ONNXRUNTIME_LIB)", err)
	}
	defer s.Close()
	states := []policy.State{policy.Neutral, {0.9, 0.05, 0.2, 0.3, 0.5, 0, 0.4, 0.6, 0.1, 0.2, 0.9, 0}}
	out := make([]policy.Decision, len(states))
	if err := s.Decide(states, out); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	want := make([]policy.Decision, len(states))
	if err := policy.NewGoDecider(s.MLP(), meta).Decide(states, want); err != nil {
		t.Fatal(err)
	}
	for i := range out {
		if out[i].Priority < 0 || out[i].Priority >= policy.NumActions {
			t.Errorf("state %d: priority %d", i, out[i].Priority)
		}
		for a := range out[i].Q {
			if d := out[i].Q[a] - want[i].Q[a]; d > 1e-5 || d < -1e-5 {
				t.Errorf("state %d action %d: ORT %v, Go %v", i, a, out[i].Q[a], want[i].Q[a])
			}
		}
	}
	t.Logf("embedded model %q (%s), %d bytes, on %s", meta.Version, meta.Description, len(b), s.Device())
}
