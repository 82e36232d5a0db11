package profiling

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/internal/testenv"
)

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireBPF(t, "profiling with eBPF needs root (CAP_BPF + CAP_PERFMON)")
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Targets are built once per test binary (a go build is the slowest step
// of these tests) into a directory TestMain removes.
var (
	buildDir   string
	buildMu    sync.Mutex
	buildCache = map[string]string{}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "profiling-targets-")
	if err != nil {
		panic(err)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildGoTarget builds testdata/flamegraph/hotgo with extra go build flags.
func buildGoTarget(t *testing.T, flags ...string) string {
	t.Helper()
	key := "go " + strings.Join(flags, " ")
	buildMu.Lock()
	defer buildMu.Unlock()
	if out, ok := buildCache[key]; ok {
		return out
	}
	out := filepath.Join(buildDir, fmt.Sprintf("hotgo%d", len(buildCache)))
	args := append([]string{"build", "-o", out}, flags...)
	args = append(args, "./testdata/flamegraph/hotgo")
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hotgo: %v\n%s", err, b)
	}
	buildCache[key] = out
	return out
}

// buildNoFPTarget builds testdata/flamegraph/nofp/<src> with cc -O2 -g:
// Debian's own flags, so no frame pointers.
func buildNoFPTarget(t *testing.T, cc, src string) string {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		testenv.Unavailable(t, cc+" not installed")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	key := cc + " " + src
	if out, ok := buildCache[key]; ok {
		return out
	}
	out := filepath.Join(buildDir, "nofp-"+strings.TrimSuffix(src, filepath.Ext(src))+"-"+cc)
	cmd := exec.Command(cc, "-O2", "-g", "-o", out, filepath.Join(repoRoot(t), "testdata", "flamegraph", "nofp", src))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, b)
	}
	buildCache[key] = out
	return out
}

func buildCTarget(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Unavailable(t, "gcc not installed")
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if out, ok := buildCache["c"]; ok {
		return out
	}
	out := filepath.Join(buildDir, "hotc")
	src := filepath.Join(repoRoot(t), "testdata", "flamegraph", "hotc", "hot.c")
	cmd := exec.Command("gcc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-fno-optimize-sibling-calls", "-o", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hot.c: %v\n%s", err, b)
	}
	buildCache["c"] = out
	return out
}

// startTarget runs a target and waits for its "ready" line; it is killed at
// test end.
func startTarget(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	return startTargetIn(t, "", bin, args...)
}

// startTargetIn is startTarget with the target's working directory.
func startTargetIn(t *testing.T, dir, bin string, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("%s did not get ready: %q %v", bin, line, err)
	}
	return cmd
}

// procCPU is a process's user+system time.
func procCPU(t *testing.T, pid int) time.Duration {
	u, err := proc.ReadUsage(pid)
	if err != nil {
		t.Fatal(err)
	}
	return u.CPU
}

// recordCPU profiles pid until it has used cpu of CPU time (at most 15 s
// of wall time: on a loaded machine a fixed wall-time window may hold
// little of the target's CPU), and returns the result and the CPU used.
func recordCPU(t *testing.T, pid int, cpu time.Duration, hz int) (*Result, time.Duration) {
	t.Helper()
	return recordCPUMode(t, pid, cpu, hz, UnwindAuto)
}

// recordCPUMode is recordCPU with a given unwind mode.
func recordCPUMode(t *testing.T, pid int, cpu time.Duration, hz int, mode UnwindMode) (*Result, time.Duration) {
	t.Helper()
	cfg := Config{Unwind: mode}
	cfg.Profiler.FrequencyHz = hz
	cfg.Profiler.PID = uint32(pid)
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer r.Close()
	start := procCPU(t, pid)
	for deadline := time.Now().Add(15 * time.Second); procCPU(t, pid)-start < cpu && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	used := procCPU(t, pid) - start
	res, err := r.Collect()
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return res, used
}

// record profiles pid for d and returns the result.
func record(t *testing.T, pid int, d time.Duration, hz int, offCPU bool) *Result {
	t.Helper()
	return recordWith(t, pid, d, hz, offCPU, UnwindAuto)
}

// recordMode profiles pid on-CPU for d with a given unwind mode.
func recordMode(t *testing.T, pid int, d time.Duration, hz int, mode UnwindMode) *Result {
	t.Helper()
	return recordWith(t, pid, d, hz, false, mode)
}

func recordWith(t *testing.T, pid int, d time.Duration, hz int, offCPU bool, mode UnwindMode) *Result {
	t.Helper()
	cfg := Config{Unwind: mode}
	cfg.Profiler.FrequencyHz = hz
	cfg.Profiler.PID = uint32(pid)
	cfg.Profiler.OffCPU = offCPU
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer r.Close()
	time.Sleep(d)
	res, err := r.Collect()
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return res
}

// leafTotals sums sample values per leaf function name, and over all samples.
func leafTotals(p *profile.Profile, vi int) (map[string]int64, int64) {
	m := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[vi]
		if len(s.Location) == 0 || len(s.Location[0].Line) == 0 {
			continue
		}
		m[s.Location[0].Line[0].Function.Name] += s.Value[vi]
	}
	return m, total
}

// stackNames returns a sample's function names leaf first.
func stackNames(s *profile.Sample) []string {
	var out []string
	for _, l := range s.Location {
		for _, ln := range l.Line {
			out = append(out, ln.Function.Name)
		}
	}
	return out
}

// containsInOrder reports whether want appears in names as a subsequence
// (names leaf first, want leaf first).
func containsInOrder(names, want []string) bool {
	i := 0
	for _, n := range names {
		if i < len(want) && n == want[i] {
			i++
		}
	}
	return i == len(want)
}

func isKernel(l *profile.Location) bool {
	return l.Mapping != nil && l.Mapping.File == "[kernel.kallsyms]"
}
