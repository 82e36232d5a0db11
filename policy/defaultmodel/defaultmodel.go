// Package defaultmodel embeds the policy the agent runs when no --model is
// given. `make model` trains it from the project's scenarios with a fixed
// seed and overwrites model.onnx; until then model.onnx is the hand-set
// bootstrap model (policy.BootstrapMLP, version "bootstrap-0"), which
// `go test ./policy/defaultmodel -write-bootstrap` rewrites.
package defaultmodel

import (
	"bytes"
	_ "embed"
)

//go:embed model.onnx
var model []byte

// Bytes returns a copy of the embedded ONNX model, for policy.LoadBytes.
func Bytes() []byte { return bytes.Clone(model) }
