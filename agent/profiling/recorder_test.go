package profiling

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/flamegraph"
)

// TestOnCPUHotFunctionGo profiles a stripped PIE Go binary (names come from
// pclntab, addresses need the PIE offset arithmetic) with a known hot chain.
func TestOnCPUHotFunctionGo(t *testing.T) {
	requireRoot(t)
	bin := buildGoTarget(t, "-buildmode=pie", "-ldflags=-s -w")
	cmd := startTarget(t, bin, "-mode", "cpu", "-duration", "30s")
	res, used := recordCPU(t, cmd.Process.Pid, 600*time.Millisecond, 499)
	if res.OnCPU == nil {
		t.Fatal("no on-CPU samples")
	}
	leaves, total := leafTotals(res.OnCPU, 0)
	hot := leaves["main.hotLoop"]
	t.Logf("%d samples for %v of CPU, main.hotLoop %d (%.0f%%)", total, used, hot, 100*float64(hot)/float64(total))
	// At 499 Hz, used CPU should give used×499 samples; want at least half
	// (the sampler must not lose most of them).
	if want := int64(used.Seconds() * 499 / 2); total < want {
		t.Fatalf("only %d samples for %v of CPU at 499 Hz, want >= %d", total, used, want)
	}
	if 2*hot < total {
		t.Fatalf("main.hotLoop has %d of %d samples, want at least half; leaves: %v", hot, total, leaves)
	}
	chain := []string{"main.hotLoop", "main.level2", "main.level1", "main.runCPU", "main.main"}
	found := false
	for _, s := range res.OnCPU.Sample {
		if containsInOrder(stackNames(s), chain) {
			found = true
			break
		}
	}
	if !found {
		for _, s := range res.OnCPU.Sample[:min(5, len(res.OnCPU.Sample))] {
			t.Logf("sample: %v", stackNames(s))
		}
		t.Fatalf("no sample has the chain %v", chain)
	}
	checkPprofTop(t, res, "main.hotLoop")
}

// checkPprofTop writes the profile and runs `go tool pprof -top` on it, as an
// SRE would.
func checkPprofTop(t *testing.T, res *Result, want string) {
	t.Helper()
	checkPprofTopFolded(t, res, want, want)
}

// checkPprofTopFolded is checkPprofTop where the names differ: go tool
// pprof drops C++ template arguments (shapes::Kernel::run), the folded
// output keeps them (shapes::Kernel<3>::run).
func checkPprofTopFolded(t *testing.T, res *Result, want, foldedWant string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "window")
	paths, err := flamegraph.WriteFiles(prefix, res.OnCPU, flamegraph.SVGOptions{})
	if err != nil {
		t.Fatalf("WriteFiles: %v", err)
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", paths[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("go tool pprof -top does not list %s:\n%s", want, out)
	}
	folded, err := os.ReadFile(paths[1])
	if err != nil || !strings.Contains(string(folded), foldedWant) {
		t.Fatalf("folded output lacks %s (%v)", foldedWant, err)
	}
}

// TestOnCPUHotFunctionC profiles a C program: names come from the ELF
// symbol table.
func TestOnCPUHotFunctionC(t *testing.T) {
	requireRoot(t)
	bin := buildCTarget(t)
	cmd := startTarget(t, bin, "30")
	res, _ := recordCPU(t, cmd.Process.Pid, 600*time.Millisecond, 499)
	if res.OnCPU == nil {
		t.Fatal("no on-CPU samples")
	}
	leaves, total := leafTotals(res.OnCPU, 0)
	hot := leaves["hot_function"]
	t.Logf("%d samples, hot_function %d", total, hot)
	if 2*hot < total {
		t.Fatalf("hot_function has %d of %d samples; leaves: %v", hot, total, leaves)
	}
	found := false
	for _, s := range res.OnCPU.Sample {
		if containsInOrder(stackNames(s), []string{"hot_function", "middle_function", "main"}) {
			found = true
			break
		}
	}
	if !found {
		for _, s := range res.OnCPU.Sample[:min(5, len(res.OnCPU.Sample))] {
			t.Logf("sample: %v", stackNames(s))
		}
		t.Fatal("no sample has hot_function <- middle_function <- main")
	}
	checkPprofTop(t, res, "hot_function")
}

// TestOnCPUKernelFrames profiles a program that spends its time in read(2)
// of /dev/zero: kernel frames must sit above its user frames.
func TestOnCPUKernelFrames(t *testing.T) {
	requireRoot(t)
	bin := buildGoTarget(t)
	cmd := startTarget(t, bin, "-mode", "syscall", "-duration", "30s")
	res, _ := recordCPU(t, cmd.Process.Pid, 600*time.Millisecond, 499)
	if res.OnCPU == nil {
		t.Fatal("no on-CPU samples")
	}
	var total, withKernel int64
	kernelNames := map[string]bool{}
	for _, s := range res.OnCPU.Sample {
		total += s.Value[0]
		names := stackNames(s)
		if len(s.Location) > 0 && isKernel(s.Location[0]) && containsInOrder(names, []string{"main.readZero", "main.runSyscall"}) {
			withKernel += s.Value[0]
			kernelNames[names[0]] = true
		}
		for _, n := range names {
			if strings.HasPrefix(n, "[kernel]+0x") {
				t.Errorf("unnamed kernel frame %s (kallsyms not used?)", n)
				break
			}
		}
	}
	t.Logf("%d of %d samples in the kernel under main.readZero; leaves e.g. %v", withKernel, total, keys(kernelNames, 5))
	if withKernel*4 < total {
		t.Fatalf("only %d of %d samples have kernel frames under main.readZero", withKernel, total)
	}
}

func keys(m map[string]bool, n int) []string {
	var out []string
	for k := range m {
		if len(out) == n {
			break
		}
		out = append(out, k)
	}
	return out
}

// TestOffCPUSleep: a program blocking in main.sleepyWait (100 ms nanosleeps)
// for the whole window shows that stack with about the window's length.
// Tolerance: at least 70% and at most 110% of the window, since the first
// and last sleep straddle the window edges and a block is only counted when
// the thread runs again.
func TestOffCPUSleep(t *testing.T) {
	requireRoot(t)
	bin := buildGoTarget(t)
	cmd := startTarget(t, bin, "-mode", "sleep", "-duration", "30s")
	const window = 2 * time.Second
	res := record(t, cmd.Process.Pid, window, 19, true)
	if res.OffCPU == nil {
		t.Fatal("no off-CPU samples")
	}
	var sleepy int64
	for _, s := range res.OffCPU.Sample {
		names := stackNames(s)
		if containsInOrder(names, []string{"main.sleepyWait", "main.runSleep", "main.main"}) {
			sleepy += s.Value[0]
			if !isKernel(s.Location[0]) {
				t.Errorf("off-CPU stack does not start in the kernel: %v", names)
			}
		}
	}
	got := time.Duration(sleepy)
	measured := res.Window.End.Sub(res.Window.Start)
	t.Logf("off-CPU in main.sleepyWait: %v over a %v window", got, measured)
	if got < measured*7/10 || got > measured*11/10 {
		for _, s := range res.OffCPU.Sample {
			t.Logf("  tid %v %v: %v", s.NumLabel["tid"], time.Duration(s.Value[0]), stackNames(s))
		}
		t.Fatalf("main.sleepyWait blocked %v, want about %v (70%%..110%%)", got, measured)
	}
	// The written off-CPU profile opens in pprof too.
	p := filepath.Join(t.TempDir(), "off.pb.gz")
	if err := flamegraph.WriteProfile(p, res.OffCPU); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", p).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "main.sleepyWait") {
		t.Fatalf("pprof -top on the off-CPU profile: %v\n%s", err, out)
	}
}

// TestSaveWindowIntoStore is what the agent does every interval: one window
// of a busy target lands in the store as pprof, folded and SVG.
func TestSaveWindowIntoStore(t *testing.T) {
	r := recordBusyTarget(t, Config{})
	store, err := flamegraph.NewStore(flamegraph.StoreConfig{Dir: t.TempDir(), MaxWindows: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r.Wait(t.Context(), 400*time.Millisecond)
		if err := r.SaveWindow(store); err != nil {
			t.Fatalf("SaveWindow: %v", err)
		}
	}
	ws := store.List()
	if len(ws) != 2 {
		t.Fatalf("store holds %d windows, want the cap of 2", len(ws))
	}
	for _, f := range ws[0].Files {
		b, err := os.ReadFile(f.Path)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", f.Path, err, len(b))
		}
		if f.Kind == "folded" && !strings.Contains(string(b), "main.hotLoop") {
			t.Fatalf("window's folded stacks lack main.hotLoop:\n%s", b)
		}
	}
}

// TestRunCallsTheWindowHooksAroundEachWindow: Run calls
// Config.BeforeWindow before each window is collected and
// Config.AfterWindow once it is written (the agent may give the window
// more Ps between them, and returns its memory to the OS in the second),
// each once a window, in that order.
func TestRunCallsTheWindowHooksAroundEachWindow(t *testing.T) {
	store, err := flamegraph.NewStore(flamegraph.StoreConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var calls []string // "before N" / "after N": N windows in the store at the call
	hook := func(name string) func() {
		return func() { calls = append(calls, fmt.Sprintf("%s %d", name, len(store.List()))) }
	}
	r := recordBusyTarget(t, Config{BeforeWindow: hook("before"), AfterWindow: hook("after")})
	ctx, cancel := context.WithTimeout(t.Context(), 1700*time.Millisecond)
	defer cancel()
	if err := r.Run(ctx, store, 500*time.Millisecond); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(calls) < 4 {
		t.Fatalf("hooks called %v in three windows' time, want two windows' worth or more", calls)
	}
	for i, c := range calls {
		want := fmt.Sprintf("before %d", i/2)
		if i%2 == 1 {
			want = fmt.Sprintf("after %d", i/2+1)
		}
		if c != want {
			t.Fatalf("call %d was %q, want %q (each window between its two hooks): %v", i+1, c, want, calls)
		}
	}
}

// recordBusyTarget is a recorder under cfg sampling, at 199 Hz, a Go
// target that spins for 30 s; it closes with the test.
func recordBusyTarget(t *testing.T, cfg Config) *Recorder {
	t.Helper()
	requireRoot(t)
	cmd := startTarget(t, buildGoTarget(t), "-mode", "cpu", "-duration", "30s")
	cfg.Profiler.FrequencyHz = 199
	cfg.Profiler.PID = uint32(cmd.Process.Pid)
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
