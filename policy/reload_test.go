package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testenv"
)

func newTestReloader(t *testing.T, model []byte, opts ...ReloaderOption) *Reloader {
	t.Helper()
	s, err := LoadBytes(model, Config{Device: DeviceCPU})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReloader(s, Config{Device: DeviceCPU, Logger: testLogger()}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestReloadSwapsAndKeepsOldOnBadFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	m1, m2 := randomMLP(rng, 16), randomMLP(rng, 24)
	var swaps []string
	var refused []string
	r := newTestReloader(t, mustMarshal(t, m1, testMetadata("v1")),
		OnSwap(func(old, new Metadata) { swaps = append(swaps, old.Version+"->"+new.Version) }),
		OnReloadError(func(path string, err error) { refused = append(refused, err.Error()) }))
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")

	testenv.ReplaceFile(t, path, mustMarshal(t, m2, testMetadata("v2")))
	if err := r.Reload(path); err != nil {
		t.Fatalf("Reload v2: %v", err)
	}
	if r.Version() != "v2" || len(swaps) != 1 || swaps[0] != "v1->v2" {
		t.Fatalf("after reload: version %q, swaps %v", r.Version(), swaps)
	}
	checkAgainstForward(t, r, m2)
	if err := r.Reload(path); !errors.Is(err, ErrUnchanged) {
		t.Errorf("reloading the same file: %v, want ErrUnchanged", err)
	}

	wrongSchema := testMetadata("v3-wrong-schema")
	wrongSchema.Schema = "triage.state.v9"
	good := mustMarshal(t, m1, testMetadata("v3"))
	bad := []struct {
		name  string
		bytes []byte
		want  error
	}{
		{"truncated", good[:len(good)-7], ErrMalformedModel},
		{"cut in the graph", good[:len(good)/2], ErrMalformedModel},
		{"empty", nil, ErrMalformedModel},
		{"wrong schema", mustMarshal(t, m1, wrongSchema), ErrSchemaMismatch},
		{"foreign graph", foreignModel(true), ErrForeignModel},
	}
	for i, c := range bad {
		testenv.ReplaceFile(t, path, c.bytes)
		err := r.Reload(path)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), `keeping model "v2"`) {
			t.Errorf("%s: error does not say the old model stays: %v", c.name, err)
		}
		if r.Version() != "v2" {
			t.Fatalf("%s: version %q after a refused reload, want v2", c.name, r.Version())
		}
		if st := r.Stats(); st.Failures != uint64(i+1) || st.LastError == nil {
			t.Errorf("%s: stats %+v", c.name, st)
		}
	}
	if err := r.Reload(filepath.Join(dir, "missing.onnx")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	checkAgainstForward(t, r, m2) // the old model still serves, and correctly
	if len(refused) != len(bad)+1 {
		t.Errorf("OnReloadError called %d times, want %d", len(refused), len(bad)+1)
	}
	if st := r.Stats(); st.Swaps != 1 {
		t.Errorf("swaps %d, want 1", st.Swaps)
	}
}

// TestReloadUnderLoad swaps between two models while callers decide; every
// answer must come wholly from one of the two models.
func TestReloadUnderLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	ms := []*MLP{randomMLP(rng, 16), randomMLP(rng, 16)}
	files := [][]byte{mustMarshal(t, ms[0], testMetadata("a")), mustMarshal(t, ms[1], testMetadata("b"))}
	r := newTestReloader(t, files[0])
	states := randomStates(rng, 32)
	var want [2][]Decision
	for k := range ms {
		want[k] = make([]Decision, len(states))
		if err := NewGoDecider(ms[k], Metadata{}).Decide(states, want[k]); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]Decision, len(states))
			for !stop.Load() {
				if err := r.Decide(states, out); err != nil {
					errs <- err
					return
				}
				if !closeTo(out, want[0]) && !closeTo(out, want[1]) {
					errs <- errors.New("an answer matched neither model: a swap was not atomic")
					return
				}
			}
		}()
	}
	for i := 1; i <= 20; i++ {
		if err := r.ReloadBytes("mem", files[i%2]); err != nil {
			t.Errorf("swap %d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := r.Stats(); st.Swaps != 20 {
		t.Errorf("swaps %d, want 20", st.Swaps)
	}
}

func closeTo(a, b []Decision) bool {
	for i := range a {
		for j := range a[i].Q {
			if d := a[i].Q[j] - b[i].Q[j]; d > 1e-5 || d < -1e-5 {
				return false
			}
		}
	}
	return true
}

func TestWatchPicksUpNewFileAndRefusesBadOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	path := filepath.Join(t.TempDir(), "model.onnx")
	first := mustMarshal(t, randomMLP(rng, 8), testMetadata("w1"))
	testenv.ReplaceFile(t, path, first)
	swapped := make(chan string, 4)
	refused := make(chan error, 4)
	r := newTestReloader(t, first,
		OnSwap(func(_, new Metadata) { swapped <- new.Version }),
		OnReloadError(func(_ string, err error) { refused <- err }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Watch(ctx, path, 10*time.Millisecond) }()
	defer func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watch returned %v", err)
		}
	}()
	deadline := time.After(20 * time.Second) // generous: 2 shared cores

	m2 := randomMLP(rng, 8)
	testenv.ReplaceFile(t, path, mustMarshal(t, m2, testMetadata("w2")))
	select {
	case v := <-swapped:
		if v != "w2" {
			t.Fatalf("swapped to %q", v)
		}
	case err := <-refused:
		t.Fatalf("refused a good model: %v", err)
	case <-deadline:
		t.Fatal("Watch did not pick up the new model")
	}
	testenv.ReplaceFile(t, path, []byte("this is not an ONNX model"))
	select {
	case err := <-refused:
		if !errors.Is(err, ErrMalformedModel) && !errors.Is(err, ErrForeignModel) {
			t.Errorf("refusal: %v", err)
		}
	case v := <-swapped:
		t.Fatalf("swapped to a bad file (%q)", v)
	case <-deadline:
		t.Fatal("Watch did not report the bad file")
	}
	if r.Version() != "w2" {
		t.Errorf("version %q after a bad file, want w2", r.Version())
	}
	checkAgainstForward(t, r, m2)
}

// TestReloaderAutoStaysOnInitialDevice: after auto fell back once, reloads
// do not try CUDA again, so the fallback line is not repeated per reload.
func TestReloaderAutoStaysOnInitialDevice(t *testing.T) {
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	rng := rand.New(rand.NewPCG(81, 82))
	s, err := LoadBytes(mustMarshal(t, randomMLP(rng, 4), testMetadata("a1")), Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReloader(s, Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := strings.Count(logs.String(), "CUDA unavailable")
	for i := range 3 {
		if err := r.ReloadBytes("mem", mustMarshal(t, randomMLP(rng, 4), testMetadata(fmt.Sprint("a", i+2)))); err != nil {
			t.Fatal(err)
		}
		if r.Device() != s.Device() {
			t.Fatalf("reload moved from %s to %s", s.Device(), r.Device())
		}
	}
	if after := strings.Count(logs.String(), "CUDA unavailable"); s.Device() == DeviceCPU && after != before {
		t.Errorf("reloads logged %d more fallback lines, want 0", after-before)
	}
}

func TestReloaderClosed(t *testing.T) {
	r := newTestReloader(t, mustMarshal(t, BootstrapMLP(), BootstrapMetadata()))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Decide([]State{Neutral}, make([]Decision, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Decide after Close: %v, want ErrClosed", err)
	}
	other := mustMarshal(t, randomMLP(rand.New(rand.NewPCG(91, 92)), 4), testMetadata("late"))
	if err := r.ReloadBytes("mem", other); !errors.Is(err, ErrClosed) {
		t.Errorf("reload after Close: %v, want ErrClosed", err)
	}
}
