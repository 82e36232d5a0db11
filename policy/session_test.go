package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestSessionMatchesForward checks ORT against the Go forward pass on the
// same weights, for several shapes and batch sizes.
func TestSessionMatchesForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][]int{nil, {16}, {64, 64}, {128, 32, 16}}
	for _, hidden := range shapes {
		m := randomMLP(rng, hidden...)
		s := loadCPU(t, mustMarshal(t, m, testMetadata("rand")))
		ref := NewGoDecider(m, testMetadata("rand"))
		for _, n := range []int{1, 3, 256, 1500} {
			states := randomStates(rng, n)
			got := make([]Decision, n)
			want := make([]Decision, n)
			if err := s.Decide(states, got); err != nil {
				t.Fatalf("hidden %v batch %d: Decide: %v", hidden, n, err)
			}
			if err := ref.Decide(states, want); err != nil {
				t.Fatalf("GoDecider: %v", err)
			}
			var maxErr float64
			for i := range got {
				for a := range got[i].Q {
					maxErr = math.Max(maxErr, math.Abs(float64(got[i].Q[a]-want[i].Q[a])))
				}
			}
			if maxErr >= 1e-5 {
				t.Errorf("hidden %v batch %d: max abs error %g, want < 1e-5", hidden, n, maxErr)
			}
			t.Logf("hidden %v batch %d: max abs error %.3g", hidden, n, maxErr)
		}
	}
}

// A Decide longer than Config.MaxBatch is split into calls of at most
// that many states, and answers as the Go forward pass does.
func TestSessionSplitsAtMaxBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := randomMLP(rng, 32)
	s, err := LoadBytes(mustMarshal(t, m, testMetadata("split")), Config{Device: DeviceCPU, MaxBatch: 7})
	if err != nil {
		t.Fatalf("LoadBytes: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if s.maxBatch != 7 {
		t.Fatalf("session batch cap %d, want the configured 7", s.maxBatch)
	}
	checkAgainstForward(t, s, m) // one Decide of 64 states
	// ORT ran the calls' batch classes and no larger one: nine calls of 7
	// states and one of 1 run as 8 and 1 rows (batchClass), where one call
	// of 64 would have run 64.
	s.tensors.mu.Lock()
	ran := make([]int, 0, len(s.tensors.free))
	for rows := range s.tensors.free {
		ran = append(ran, rows)
	}
	s.tensors.mu.Unlock()
	slices.Sort(ran)
	if !slices.Equal(ran, []int{1, 8}) {
		t.Fatalf("ORT ran batches of %v rows, want [1 8]", ran)
	}
}

// TestSessionConcurrentDecide runs callers of mixed batch sizes at once;
// every answer must match the Go forward pass, and Close must wait.
func TestSessionConcurrentDecide(t *testing.T) {
	m := randomMLP(rand.New(rand.NewPCG(31, 32)), 32, 32)
	s := loadCPU(t, mustMarshal(t, m, testMetadata("conc")))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			var q [NumActions]float32
			for range 50 {
				states := randomStates(rng, 1+rng.IntN(300))
				out := make([]Decision, len(states))
				if err := s.Decide(states, out); err != nil {
					errs <- err
					return
				}
				for i := range states {
					m.Forward(&states[i], &q, nil)
					for a := range q {
						if math.Abs(float64(out[i].Q[a]-q[a])) >= 1e-5 {
							errs <- fmt.Errorf("goroutine %d state %d action %d: %v vs %v", g, i, a, out[i].Q[a], q[a])
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSessionClosed(t *testing.T) {
	s, err := LoadBytes(mustMarshal(t, BootstrapMLP(), BootstrapMetadata()), Config{Device: DeviceCPU})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Decide([]State{Neutral}, make([]Decision, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Decide after Close: %v, want ErrClosed", err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(path, mustMarshal(t, BootstrapMLP(), BootstrapMetadata()), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadFile(path, Config{Device: DeviceCPU})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Version() != BootstrapVersion || s.Metadata().Schema != StateSchema {
		t.Errorf("version %q schema %q", s.Version(), s.Metadata().Schema)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.onnx"), Config{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// Batches run padded to a size class: at most half again as many rows, one
// class for every size between two, and the padded answers match the Go
// forward pass for the real rows (TestSessionMatchesForward covers 3, 256
// and 1500 too).
func TestBatchClass(t *testing.T) {
	classes := map[int]bool{}
	prev := 0
	for n := 1; n <= 1024; n++ {
		c := batchClass(n)
		if c < n || c > n+n/2 || c < prev {
			t.Fatalf("batch %d runs as %d (after %d)", n, c, prev)
		}
		classes[c], prev = true, c
	}
	if len(classes) > 20 {
		t.Fatalf("%d classes for batches up to 1024", len(classes))
	}
	m := randomMLP(rand.New(rand.NewPCG(5, 6)), 16)
	s := loadCPU(t, mustMarshal(t, m, testMetadata("rand")))
	ref := NewGoDecider(m, testMetadata("rand"))
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{5, 7, 13, 25, 97} {
		states := randomStates(rng, n)
		got, want := make([]Decision, n), make([]Decision, n)
		if err := s.Decide(states, got); err != nil {
			t.Fatal(err)
		}
		if err := ref.Decide(states, want); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			for a := range got[i].Q {
				if d := math.Abs(float64(got[i].Q[a] - want[i].Q[a])); d >= 1e-5 {
					t.Fatalf("batch %d (class %d) row %d: Q differs by %g", n, batchClass(n), i, d)
				}
			}
		}
	}
}
