package serve_test

import (
	"testing"

	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/internal/testmodel"
	"github.com/triage-agent/triage/policy"
)

// The endpoint serving the embedded default model through ONNX Runtime: the
// answers over QUIC equal the plain Go forward pass of the same network.
func TestDecideWithONNXRuntime(t *testing.T) {
	sess := testmodel.Default(t, policy.Config{})
	gb, _ := goBackend()
	b := backend.NewPolicy(sess, gb.State())
	ref := backend.NewPolicy(policy.NewGoDecider(sess.MLP(), sess.Metadata()), gb.State())

	tasks, resp, want := decideOverTheWire(t, b, ref, 32)
	if resp.GetModel() != sess.Version() {
		t.Errorf("model %q, want %q", resp.GetModel(), sess.Version())
	}
	for i, d := range resp.GetDecisions() {
		for k, q := range d.GetQ() {
			if diff := q - want[i].GetQ()[k]; diff > 1e-4 || diff < -1e-4 {
				t.Fatalf("task %d q[%d]: ORT over QUIC %v, Go %v", i, k, q, want[i].GetQ()[k])
			}
		}
	}
	t.Logf("ORT device %s, model %s: %d decisions over triage/1 match the Go forward pass", sess.Device(), sess.Version(), len(tasks))
}
