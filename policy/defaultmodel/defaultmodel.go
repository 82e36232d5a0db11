// Package defaultmodel embeds the policy the agent runs when no --model is
// given. provenance.txt names the commit whose trainer and recipe built it
// and its sha256; `make model` rebuilds it from that commit, bit for bit
// (scripts/train-default-model.sh). `go test ./policy/defaultmodel
// -write-bootstrap` replaces it with the hand-set bootstrap model
// (policy.BootstrapMLP, version "bootstrap-0").
package defaultmodel

import (
	"bytes"
	_ "embed"
)

//go:embed model.onnx
var model []byte

// Bytes returns a copy of the embedded ONNX model, for policy.LoadBytes.
func Bytes() []byte { return bytes.Clone(model) }
