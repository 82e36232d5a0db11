package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/bench/proc"
)

// spin burns cpu of CPU time on this thread (not wall time: on a loaded
// machine a wall-time spin may get little CPU), giving up after 10 s.
func spin(cpu time.Duration) uint64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	var x uint64
	for deadline := time.Now().Add(10 * time.Second); threadCPU()-start < cpu && time.Now().Before(deadline); {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is a process's user+system time.
func procCPU(t *testing.T, pid int) time.Duration {
	u, err := proc.ReadUsage(pid)
	if err != nil {
		t.Fatal(err)
	}
	return u.CPU
}

func TestProfilerSamplesOwnProcess(t *testing.T) {
	requireBPF(t)
	p := mustOpen(t, OpenProfiler, ProfilerOptions{FrequencyHz: 499, PID: uint32(os.Getpid())})
	spin(300 * time.Millisecond)
	w := mustDrain(t, p)
	var total uint64
	withUser, withKernel := 0, 0
	for _, s := range w.OnCPU {
		if s.Tgid != uint32(os.Getpid()) {
			t.Fatalf("pid filter leaked a sample of tgid %d (%s)", s.Tgid, s.Comm)
		}
		total += s.Value
		if len(s.User) > 0 {
			withUser++
		}
		if len(s.Kernel) > 0 {
			withKernel++
		}
	}
	// 0.3 s of CPU at 499 Hz is ~150 samples; want at least half.
	if total < 75 {
		t.Fatalf("got %d samples for 0.3 s of CPU at 499 Hz, want >= 75", total)
	}
	if withUser == 0 {
		t.Fatalf("no sample carried a user stack: %+v", w.OnCPU)
	}
	t.Logf("%d samples, %d keys, %d with user stack, %d with kernel stack", total, len(w.OnCPU), withUser, withKernel)

	// The next window starts empty: the drained generation was deleted.
	again := drainOnCPU(t, p)
	if again >= total {
		t.Fatalf("second idle window has %d samples, first busy one %d: drain did not reset", again, total)
	}
}

// TestProfilerOffCPUSeesSleep runs each sched_switch flavour (the
// fallbacks must work too, not only the first choice).
func TestProfilerOffCPUSeesSleep(t *testing.T) {
	requireBPF(t)
	for _, hook := range []string{"tp_btf", "raw_tp", "tracepoint"} {
		t.Run(hook, func(t *testing.T) { testOffCPUSleep(t, hook) })
	}
}

func testOffCPUSleep(t *testing.T, hook string) {
	p := mustOpen(t, OpenProfiler, ProfilerOptions{FrequencyHz: 19, PID: uint32(os.Getpid()), OffCPU: true, OffCPUHook: hook, MinBlock: 5 * time.Millisecond})
	if p.OffCPUHook() != hook {
		t.Fatalf("attached %q, asked for %q", p.OffCPUHook(), hook)
	}
	runtime.LockOSThread()
	const nap = 50 * time.Millisecond
	for i := 0; i < 4; i++ {
		time.Sleep(nap)
	}
	runtime.UnlockOSThread()
	w := mustDrain(t, p)
	var blocked uint64
	for _, s := range w.OffCPU {
		if s.Tgid != uint32(os.Getpid()) {
			t.Fatalf("pid filter leaked off-CPU time of tgid %d", s.Tgid)
		}
		if s.Value < uint64(5*time.Millisecond) {
			t.Fatalf("a %v block passed the 5ms minimum", time.Duration(s.Value))
		}
		blocked += s.Value
	}
	if blocked < uint64(4*nap*8/10) {
		t.Fatalf("off-CPU total %v, want at least %v", time.Duration(blocked), 4*nap*8/10)
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := parseCPUList("0-2,5")
	if err != nil || len(got) != 4 || got[3] != 5 {
		t.Fatalf("parseCPUList = %v, %v", got, err)
	}
	for _, bad := range []string{"", "x", "3-1", "0-99999999"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) accepted", bad)
		}
	}
}

func TestCgroupFromPath(t *testing.T) {
	root, err := Cgroup2Root()
	if err != nil {
		t.Skipf("no cgroup v2 hierarchy: %v", err)
	}
	id, level, err := CgroupFromPath(root)
	if err != nil || id == 0 || level != 0 {
		t.Fatalf("root cgroup %s: id %d level %d err %v", root, id, level, err)
	}
	if _, _, err := CgroupFromPath("/nonexistent/cg"); err == nil {
		t.Fatal("missing cgroup accepted")
	}
	if _, _, err := CgroupFromPath("/proc"); err == nil {
		t.Fatal("a directory outside cgroup v2 accepted")
	}
}

// TestProfilerCgroupFilter moves a busy child into a fresh cgroup nested
// two levels deep and profiles that cgroup's parent: the child's samples
// (a descendant) must come through and nothing else.
func TestProfilerCgroupFilter(t *testing.T) {
	requireBPF(t)
	root, err := Cgroup2Root()
	if err != nil {
		t.Skipf("no cgroup v2 hierarchy: %v", err)
	}
	parent := filepath.Join(root, fmt.Sprintf("triage-test-%d", os.Getpid()))
	leaf := filepath.Join(parent, "leaf")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatalf("creating test cgroup: %v", err)
	}
	// The spinner dies with the test binary too, so a test killed by
	// -timeout leaves no busy loop behind.
	spinner, err := proc.StartLoad(proc.LoadConfig{Spinners: 1, Name: "profiler-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		spinner.Close()
		os.Remove(leaf)
		os.Remove(parent)
	})
	child := spinner.PIDs()[0]
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(fmt.Sprint(child)), 0o644); err != nil {
		t.Fatalf("moving child into cgroup: %v", err)
	}
	id, level, err := CgroupFromPath(parent)
	if err != nil {
		t.Fatal(err)
	}
	p := mustOpen(t, OpenProfiler, ProfilerOptions{FrequencyHz: 499, CgroupID: id, CgroupLevel: level})
	cpu0 := procCPU(t, child)
	spin(100 * time.Millisecond) // our own samples must be filtered out
	for deadline := time.Now().Add(10 * time.Second); procCPU(t, child)-cpu0 < 300*time.Millisecond && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	w := mustDrain(t, p)
	var total uint64
	for _, s := range w.OnCPU {
		if s.Tgid != uint32(child) {
			t.Fatalf("sample of tgid %d (%s) passed the cgroup filter", s.Tgid, s.Comm)
		}
		total += s.Value
	}
	// >= 0.3 s of the child's CPU at 499 Hz: ~150 samples; want a third.
	if total < 50 {
		t.Fatalf("only %d samples of the busy child in its cgroup", total)
	}
}

func TestUnknownOffCPUHook(t *testing.T) {
	requireBPF(t)
	_, err := OpenProfiler(ProfilerOptions{OffCPU: true, OffCPUHook: "kprobe"})
	if !errors.Is(err, ErrNoOffCPUHook) {
		t.Fatalf("unknown hook: err %v, want ErrNoOffCPUHook", err)
	}
}

func TestFrequencyBounds(t *testing.T) {
	if _, err := OpenProfiler(ProfilerOptions{FrequencyHz: 20000}); err == nil {
		t.Fatal("20 kHz accepted")
	}
}
