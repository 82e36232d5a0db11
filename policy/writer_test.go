package policy

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenBootstrap pins the writer's byte layout: a change shows up as a
// diff here before it reaches a model file in the field.
var goldenBootstrap = filepath.Join("..", "testdata", "models", "bootstrap-0.onnx")

func TestWriteONNXGolden(t *testing.T) {
	got := mustMarshal(t, BootstrapMLP(), BootstrapMetadata())
	if *update {
		if err := os.MkdirAll(filepath.Dir(goldenBootstrap), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenBootstrap, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenBootstrap)
	if err != nil {
		t.Fatalf("reading golden file (create it with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("WriteONNX output differs from %s (%d bytes vs %d); rerun with -update if the change is intended", goldenBootstrap, len(got), len(want))
	}
	var buf bytes.Buffer
	if err := WriteONNX(&buf, BootstrapMLP(), BootstrapMetadata()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("WriteONNX and MarshalONNX disagree")
	}
}

func TestReadONNXRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, hidden := range [][]int{nil, {7}, {64, 32}} {
		m := randomMLP(rng, hidden...)
		meta := testMetadata("round-trip")
		got, gotMeta, err := ReadONNX(mustMarshal(t, m, meta))
		if err != nil {
			t.Fatalf("hidden %v: ReadONNX: %v", hidden, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("hidden %v: weights differ after the round trip", hidden)
		}
		if !reflect.DeepEqual(gotMeta, meta) {
			t.Errorf("hidden %v: metadata %+v, want %+v", hidden, gotMeta, meta)
		}
		onlyMeta, err := ReadMetadata(mustMarshal(t, m, meta))
		if err != nil || !reflect.DeepEqual(onlyMeta, meta) {
			t.Errorf("ReadMetadata: %+v, %v", onlyMeta, err)
		}
	}
}

func TestWriteONNXRefusesBadInput(t *testing.T) {
	good := BootstrapMLP()
	badShape := &MLP{Layers: []Dense{{In: NumFeatures, Out: 4, W: make([]float32, 48), B: make([]float32, 4)}}}
	cases := []struct {
		name string
		m    *MLP
		meta Metadata
		want error
	}{
		{"nil MLP", nil, BootstrapMetadata(), ErrBadShape},
		{"4 outputs", badShape, BootstrapMetadata(), ErrBadShape},
		{"reserved Extra key", good, Metadata{Schema: StateSchema, Extra: map[string]string{MetaSchema: "x"}}, ErrBadMetadata},
		{"comma in a feature", good, Metadata{Schema: StateSchema, Features: []string{"a,b"}}, ErrBadMetadata},
	}
	for _, c := range cases {
		if _, err := MarshalONNX(c.m, c.meta); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}
