// Package testmodel loads the embedded default model for tests, the one
// chore that the tests of serve, train and cmd share when they check the
// model the agent ships. Only tests import it.
package testmodel

import (
	"testing"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
)

// Default is the embedded default model in an ONNX Runtime session made
// with cfg, closed when the test ends. ONNX Runtime is required, as `make
// test` provides it: without the library the test fails, naming how to get
// it, rather than skipping what it came to check.
func Default(t testing.TB, cfg policy.Config) *policy.Session {
	t.Helper()
	sess, err := policy.LoadBytes(defaultmodel.Bytes(), cfg)
	if err != nil {
		t.Fatalf("loading the default model through ONNX Runtime (run `make ort` or scripts/fetch-onnxruntime.sh and set TRIAGE_ONNXRUNTIME_LIB): %v", err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}
