package policy

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestReadONNXTruncated cuts a model at every length: each prefix must be
// refused with a typed error, none may panic or pass.
func TestReadONNXTruncated(t *testing.T) {
	model := mustMarshal(t, BootstrapMLP(), BootstrapMetadata())
	for n := 0; n < len(model); n++ {
		_, _, err := ReadONNX(model[:n])
		if !errors.Is(err, ErrMalformedModel) && !errors.Is(err, ErrForeignModel) {
			t.Fatalf("prefix of %d/%d bytes: error %v, want ErrMalformedModel or ErrForeignModel", n, len(model), err)
		}
	}
	_, _, err := ReadONNX(model[:len(model)/2])
	t.Logf("half a model: %v", err)
}

// TestLoadBytesTruncated sends cut models through the full load path.
func TestLoadBytesTruncated(t *testing.T) {
	model := mustMarshal(t, BootstrapMLP(), BootstrapMetadata())
	for _, n := range []int{0, 1, 10, len(model) / 3, len(model) - 1} {
		if s, err := LoadBytes(model[:n], Config{Device: DeviceCPU}); err == nil {
			s.Close()
			t.Errorf("a %d-byte prefix loaded", n)
		}
	}
}

// foreignModel writes a valid ONNX model of another graph: input x [N,3],
// one Relu, output y. ORT runs it; the reader must refuse it.
func foreignModel(withTriageMeta bool) []byte {
	var b []byte
	b = protowire.AppendTag(b, fModelIRVersion, protowire.VarintType)
	b = protowire.AppendVarint(b, irVersion)
	b = appendMessage(b, fModelOpsetImport, func(o []byte) []byte {
		o = protowire.AppendTag(o, fOpsetVersion, protowire.VarintType)
		return protowire.AppendVarint(o, opsetVersion)
	})
	b = appendMessage(b, fModelGraph, func(g []byte) []byte {
		g = appendString(g, fGraphName, "other")
		g = appendMessage(g, fGraphNode, func(n []byte) []byte {
			n = appendString(n, fNodeInput, "x")
			n = appendString(n, fNodeOutput, "y")
			return appendString(n, fNodeOpType, "Relu")
		})
		g = appendMessage(g, fGraphInput, func(v []byte) []byte { return appendBatchValueInfo(v, "x", 3) })
		return appendMessage(g, fGraphOutput, func(v []byte) []byte { return appendBatchValueInfo(v, "y", 3) })
	})
	if withTriageMeta {
		props, _ := metadataProps(BootstrapMetadata(), 1)
		for _, kv := range props {
			b = appendMessage(b, fModelMetadataProps, func(e []byte) []byte {
				e = appendString(e, fEntryKey, kv[0])
				return appendString(e, fEntryValue, kv[1])
			})
		}
	}
	return b
}

func TestForeignModelIsValidONNXButRefused(t *testing.T) {
	for _, withMeta := range []bool{false, true} {
		model := foreignModel(withMeta)
		// ORT itself accepts the file: it is a real ONNX model.
		if err := ensureRuntime("", testLogger()); err != nil {
			t.Fatalf("ONNX Runtime: %v", err)
		}
		cfg, _ := Config{Device: DeviceCPU}.withDefaults()
		if s, err := createSession(model, 1, cfg, false); err != nil {
			t.Fatalf("ORT refused the foreign model, so the test proves nothing: %v", err)
		} else {
			s.Destroy()
		}
		_, err := LoadBytes(model, Config{Device: DeviceCPU})
		if !errors.Is(err, ErrForeignModel) {
			t.Fatalf("foreign model (triage metadata %v): error %v, want ErrForeignModel", withMeta, err)
		}
		t.Logf("foreign model (triage metadata %v): %v", withMeta, err)
	}
}

// TestReadONNXRefusesOtherGraphs patches a good model into near misses.
func TestReadONNXRefusesOtherGraphs(t *testing.T) {
	good := mustMarshal(t, BootstrapMLP(), BootstrapMetadata())
	replace := func(old, new string) []byte {
		if len(old) != len(new) || !bytes.Contains(good, []byte(old)) {
			t.Fatalf("bad patch %q -> %q", old, new)
		}
		return bytes.ReplaceAll(good, []byte(old), []byte(new))
	}
	nanWeights := BootstrapMLP()
	nanWeights.Layers[0].W[3] = float32(math.NaN())
	nanModel, err := MarshalONNX(nanWeights, BootstrapMetadata())
	if err != nil {
		t.Fatal(err)
	}
	// The input's dim_param "N" (tag 2, length 1) becomes dim_value 7 in as
	// many bytes (tag 1, a two-byte varint), so no enclosing length changes.
	fixedBatch := bytes.Replace(good, []byte{0x12, 0x01, 'N'}, []byte{0x08, 0x87, 0x00}, 1)
	cases := []struct {
		name  string
		model []byte
		want  string
	}{
		{"Gemm became MatMul-like op", replace("Gemm", "Gexx"), "want Gemm"},
		{"Relu became Tanh-like op", replace("Relu", "Tanh"), "want Relu"},
		{"transB renamed", replace("transB", "transX"), "transB=1"},
		{"output renamed", replace("\x01q", "\x01z"), `want "q"`},
		{"NaN weight", nanModel, "non-finite"},
		{"fixed batch", fixedBatch, "fixed batch dimension"},
		{"random bytes", []byte("\x0a\xff\xff\xff\xff\x0fgarbage"), "malformed"},
	}
	for _, c := range cases {
		_, _, err := ReadONNX(c.model)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
