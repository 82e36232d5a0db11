package agent

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/internal/faulttest"
	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
)

// Fault: the model file alternates between garbage and a good model every
// 100 ms for a minute while a client decides. Kept: every decision is
// served, always by a valid model (the first, or one of the good files);
// every good file is swapped in and every bad one refused and counted;
// nothing leaks: descriptors and goroutines come back to where they were,
// and memory (ONNX Runtime sessions are native memory) stays flat.
func TestFaultModelFileFlapping(t *testing.T) {
	faulttest.Long(t, "a minute of model flapping")
	const (
		flapFor = time.Minute
		every   = 100 * time.Millisecond
	)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	good := [2][]byte{reversioned(t, "flap-a"), reversioned(t, "flap-b")}
	garbage := [][]byte{
		[]byte("not a model at all\n"),
		good[0][:len(good[0])/2], // cut short
		{},                       // empty
		bytes.Repeat([]byte{0x08, 0x07, 0x12}, 4096), // protobuf-looking noise
	}
	testenv.ReplaceFile(t, path, good[0])
	ta := startAgent(t, Config{NoEBPF: true, ModelPath: path, ModelWatchInterval: 10 * time.Millisecond})
	s := startStreamer(ta.dial(t), 1, 4, 2*time.Millisecond)
	defer s.stop()

	// A settled baseline: a few swaps in, so the first uses of every code
	// path (ONNX Runtime's allocators, the reload goroutine) are counted.
	var sample [2]usage
	start := time.Now()
	for i := 0; time.Since(start) < flapFor; i++ {
		if i%2 == 0 {
			testenv.ReplaceFile(t, path, garbage[(i/2)%len(garbage)])
		} else {
			testenv.ReplaceFile(t, path, good[(i/2)%2])
		}
		if i == 100 { // 10 s in
			sample[0] = sampleUsage(t)
		}
		time.Sleep(every)
	}
	testenv.ReplaceFile(t, path, good[1])
	waitFor(t, 5*time.Second, "the last good model to serve", func() bool { return ta.ModelVersion() == "flap-b" })
	s.stop()
	sample[1] = sampleUsage(t)

	acked, _, versions, lastErr := s.snapshot()
	if f := s.failed.Load() + s.ackFails.Load(); f != 0 || len(acked) == 0 {
		t.Fatalf("%d calls failed (last: %v), %d outcomes acknowledged: want every call served", f, lastErr, len(acked))
	}
	for v := range versions {
		if v != "flap-a" && v != "flap-b" {
			t.Errorf("decisions served by model %q, which is not one of the good files", v)
		}
	}
	swaps := ta.metric(t, "triage_model_swaps_total")
	refused := ta.metric(t, "triage_model_reload_failures_total")
	// 600 writes: 300 good (each a change of model) and 300 garbage.
	if swaps < 200 || refused < 200 {
		t.Errorf("%v swaps and %v refusals over %d writes: the watcher missed most of them", swaps, refused, int(flapFor/every))
	}
	if !strings.Contains(ta.logs.String(), "model reload refused") {
		t.Error("no refusal in the log")
	}
	b, e := sample[0], sample[1]
	t.Logf("%v swaps, %v refused; versions served %v; fds %d -> %d, goroutines %d -> %d, RSS %.1f -> %.1f MiB, Go heap %.1f -> %.1f MiB",
		swaps, refused, versions, b.fds, e.fds, b.goroutines, e.goroutines, proc.MiB(b.rss), proc.MiB(e.rss), proc.MiB(b.heap), proc.MiB(e.heap))
	if e.fds > b.fds+2 {
		t.Errorf("open descriptors went from %d to %d over %v swaps", b.fds, e.fds, swaps)
	}
	if e.goroutines > b.goroutines+5 {
		t.Errorf("goroutines went from %d to %d over %v swaps", b.goroutines, e.goroutines, swaps)
	}
	// 250 sessions leaked would be tens of MiB: a bound of 16 MiB over 50 s
	// leaves room for the allocators' noise and catches that.
	if grow := e.rss - b.rss; grow > 16<<20 {
		t.Errorf("RSS grew %.1f MiB over %v swaps", proc.MiB(grow), swaps)
	}
}

// reversioned is the embedded default model with another version.
func reversioned(t *testing.T, version string) []byte {
	t.Helper()
	m, meta, err := policy.ReadONNX(defaultmodel.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	meta.Version = version
	b, err := policy.MarshalONNX(m, meta)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type usage struct {
	fds, goroutines int
	rss, heap       int64
}

// sampleUsage samples this process after a collection, so that the Go heap
// says what is live.
func sampleUsage(t *testing.T) usage {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u, err := proc.ReadUsage(proc.Self)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := faulttest.OpenFDs(0)
	if err != nil {
		t.Fatal(err)
	}
	return usage{fds: fds, goroutines: runtime.NumGoroutine(), rss: u.RSS, heap: int64(ms.HeapInuse)}
}
