package policy

import (
	"log/slog"
	"math/rand/v2"
	"testing"
)

// randomMLP builds an MLP with the given hidden widths and weights drawn
// from a seeded source, so a failure reproduces.
func randomMLP(rng *rand.Rand, hidden ...int) *MLP {
	widths := append(append([]int{NumFeatures}, hidden...), NumActions)
	m := &MLP{}
	for i := 0; i+1 < len(widths); i++ {
		in, out := widths[i], widths[i+1]
		l := Dense{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
		for j := range l.W {
			l.W[j] = float32(rng.NormFloat64()) / float32(in)
		}
		for j := range l.B {
			l.B[j] = float32(rng.NormFloat64()) * 0.1
		}
		m.Layers = append(m.Layers, l)
	}
	return m
}

func randomStates(rng *rand.Rand, n int) []State {
	s := make([]State, n)
	for i := range s {
		for j := range s[i] {
			s[i][j] = rng.Float32()
		}
	}
	return s
}

func testMetadata(version string) Metadata {
	m := CurrentMetadata(version, "test model")
	m.Extra = map[string]string{"trainer": "policy tests", "seed": "1"}
	return m
}

// mustMarshal writes m with metadata or fails the test.
func mustMarshal(t testing.TB, m *MLP, meta Metadata) []byte {
	t.Helper()
	b, err := MarshalONNX(m, meta)
	if err != nil {
		t.Fatalf("MarshalONNX: %v", err)
	}
	return b
}

// loadCPU loads a model on the CPU, failing (never skipping) when ONNX
// Runtime is missing: CI always has it, and the error says how to get it.
func loadCPU(t testing.TB, model []byte) *Session {
	t.Helper()
	s, err := LoadBytes(model, Config{Device: DeviceCPU})
	if err != nil {
		t.Fatalf("LoadBytes: %v\n(run `make ort` or /work/main/scripts/fetch-onnxruntime.sh and set TRIAGE_ONNXRUNTIME_LIB to the path it prints)", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// checkAgainstForward compares a session with the Go forward pass of m on
// random states; the bound is the 1e-5.
func checkAgainstForward(t testing.TB, d Decider, m *MLP) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	states := randomStates(rng, 64)
	got := make([]Decision, len(states))
	if err := d.Decide(states, got); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	var q [NumActions]float32
	for i := range states {
		m.Forward(&states[i], &q, nil)
		for a := range q {
			if diff := got[i].Q[a] - q[a]; diff >= 1e-5 || diff <= -1e-5 {
				t.Fatalf("state %d action %d: got %v, Forward %v", i, a, got[i].Q[a], q[a])
			}
		}
	}
}

func testLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
