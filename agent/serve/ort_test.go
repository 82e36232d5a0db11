package serve_test

import (
	"testing"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
)

// The endpoint serving the embedded default model through ONNX Runtime: the
// answers over QUIC equal the plain Go forward pass of the same network.
func TestDecideWithONNXRuntime(t *testing.T) {
	sess, err := policy.LoadBytes(defaultmodel.Bytes(), policy.Config{})
	if err != nil {
		t.Fatalf("loading the default model in ONNX Runtime (run scripts/fetch-onnxruntime.sh or make test): %v", err)
	}
	defer sess.Close()
	gb, _ := goBackend()
	b := backend.NewPolicy(sess, gb.State())
	ref := backend.NewPolicy(policy.NewGoDecider(sess.MLP(), sess.Metadata()), gb.State())

	ts := startServer(t, serve.Config{}, b)
	c := ts.dial(t, ts.clientConfig())
	ctx := callCtx(t)
	tasks := sampleTasks(32)
	resp, err := c.Decide(ctx, tasks)
	if err != nil {
		t.Fatal(err)
	}
	want, _, _, err := ref.Decide(ctx, tasks)
	if err != nil {
		t.Fatal(err)
	}
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
