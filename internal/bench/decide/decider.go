package decide

import (
	"fmt"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
)

// OpenDecider returns the decider named by `bench decide --decider`: "ort",
// the embedded default model through ONNX Runtime on the CPU, as the agent
// serves it (ortLib: the shared library, "" for the default search); or
// "go", nil, for which Run uses the same weights' plain Go forward pass.
// close releases the decider.
func OpenDecider(kind, ortLib string) (d policy.Decider, close func() error, err error) {
	switch kind {
	case "go":
		return nil, func() error { return nil }, nil
	case "ort":
		sess, err := policy.LoadBytes(defaultmodel.Bytes(), policy.Config{Device: "cpu", LibraryPath: ortLib})
		if err != nil {
			return nil, nil, fmt.Errorf("loading the default model: %w", err)
		}
		return sess, sess.Close, nil
	}
	return nil, nil, fmt.Errorf("--decider: %q is neither ort nor go", kind)
}
