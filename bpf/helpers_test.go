package bpf

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/internal/bench/proc"
)

// The load tests run their load in a child process (this test binary,
// re-executed into TestSignalsHelperProcess) so that it can be put in its
// own cgroup and watched by pid without the test runner's own activity.
const helperEnv = "TRIAGE_SIGNALS_HELPER"

// TestSignalsHelperProcess is not a test: it is the child's entry point.
// It waits for a line on stdin, runs the load named in the environment,
// then waits for stdin to close so the parent can read its /proc files.
func TestSignalsHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process entry point; runs only when re-executed by a load test")
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(3)
	}
	parts := strings.Split(mode, ":")
	switch parts[0] {
	case "spin": // spin:THREADS:MILLIS
		n, _ := strconv.Atoi(parts[1])
		ms, _ := strconv.Atoi(parts[2])
		proc.SpinThreads(n, time.Duration(ms)*time.Millisecond)
	case "sleep": // sleep:COUNT:MICROS
		n, _ := strconv.Atoi(parts[1])
		us, _ := strconv.Atoi(parts[2])
		runtime.LockOSThread()
		ts := unix.NsecToTimespec(int64(us) * 1000)
		for i := 0; i < n; i++ {
			_ = unix.Nanosleep(&ts, nil)
		}
	}
	fmt.Println("done")
	_, _ = in.ReadString('\n')
	os.Exit(0)
}

// loadChild is a running helper process.
type loadChild struct {
	cmd   *exec.Cmd
	stdin *os.File
	out   *bufio.Reader
}

func startLoadChild(t testing.TB, mode string) *loadChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalsHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = pr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting helper: %v", err)
	}
	pr.Close()
	c := &loadChild{cmd: cmd, stdin: pw, out: bufio.NewReader(stdout)}
	t.Cleanup(func() { c.stop() })
	return c
}

func (c *loadChild) pid() int { return c.cmd.Process.Pid }

// run lets the child start its load and waits until the load is done.
func (c *loadChild) run(t testing.TB) {
	t.Helper()
	if _, err := c.stdin.WriteString("go\n"); err != nil {
		t.Fatalf("signalling helper: %v", err)
	}
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatalf("helper ended early: %v", err)
		}
		if strings.TrimSpace(line) == "done" {
			return
		}
	}
}

func (c *loadChild) stop() {
	if c.stdin != nil {
		c.stdin.Close()
		c.stdin = nil
		done := make(chan struct{})
		go func() { c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			c.cmd.Process.Kill()
			<-done
		}
	}
}

// schedstatOf sums run-queue wait (ns) and timeslices over a process's
// threads from /proc/PID/task/*/schedstat ("run_ns wait_ns slices").
func schedstatOf(pid int) (waitNs, slices uint64, err error) {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(dirs) == 0 {
		return 0, 0, fmt.Errorf("no schedstat for pid %d: %v", pid, err)
	}
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue // the thread exited between the glob and the read
		}
		if err != nil {
			return 0, 0, err
		}
		f := strings.Fields(string(b))
		if len(f) < 3 {
			return 0, 0, fmt.Errorf("%s: short line %q", p, b)
		}
		w, _ := strconv.ParseUint(f[1], 10, 64)
		s, _ := strconv.ParseUint(f[2], 10, 64)
		waitNs += w
		slices += s
	}
	return waitNs, slices, nil
}

// makeTestCgroup creates a cgroup v2 directory, returns its path and id
// (inode), and removes it at cleanup.
func makeTestCgroup(t testing.TB) (string, uint64) {
	t.Helper()
	root, err := Cgroup2Root()
	if err != nil {
		t.Skipf("per-cgroup tests need cgroup v2: %v", err)
	}
	dir := filepath.Join(root, fmt.Sprintf("triage-sigtest-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("creating cgroup: %v", err)
	}
	t.Cleanup(func() {
		// The child must have exited first; retry briefly while the
		// kernel releases it.
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return dir, st.Ino
}

func moveToCgroup(t testing.TB, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("moving pid %d into %s: %v", pid, dir, err)
	}
}

// bucketOfUs is the log2 bucket index of a value in microseconds, the unit
// bpftrace's and bcc's runqlat histograms use.
func bucketOfUs(ns float64) int {
	us := ns / 1000
	if us < 1 {
		return 0
	}
	b := 0
	for v := uint64(us); v > 1; v >>= 1 {
		b++
	}
	return b + 1 // bpftrace: [0,1) is bucket 0, [1,2) bucket 1, [2,4) bucket 2...
}

// mustDrain drains p's window; a drain that fails fails the test.
func mustDrain(t testing.TB, p *Profiler) *ProfileWindow {
	t.Helper()
	w, err := p.Drain()
	if err != nil {
		t.Fatalf("Drain: %v", err)
	}
	return w
}

// drainOnCPU drains p's window and returns how many on-CPU samples it held.
func drainOnCPU(t testing.TB, p *Profiler) uint64 {
	t.Helper()
	var n uint64
	for _, s := range mustDrain(t, p).OnCPU {
		n += s.Value
	}
	return n
}

// mustOpen opens a probe (OpenRunqlat, OpenProfiler...) with opts and
// closes it when the test (or subtest) ends; a probe that does not open
// fails the test.
func mustOpen[O any, P io.Closer](t testing.TB, open func(O) (P, error), opts O) P {
	t.Helper()
	p, err := open(opts)
	if err != nil {
		t.Fatalf("opening %T: %v", p, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
