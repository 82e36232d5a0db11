package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/internal/bench/agentproc"
	"github.com/triage-agent/triage/internal/testenv"
	"golang.org/x/sys/unix"
)

func TestArenaLimitExec(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root"}
	if got := arenaLimitExec(2, base); !slices.Equal(got, append(slices.Clone(base), "MALLOC_ARENA_MAX=2")) {
		t.Errorf("unset: %q, want the environment plus MALLOC_ARENA_MAX=2", got)
	}
	for _, env := range [][]string{
		append(slices.Clone(base), "MALLOC_ARENA_MAX=8"),                                // the operator's value
		append(slices.Clone(base), "MALLOC_ARENA_MAX="),                                 // set, even if empty
		append(slices.Clone(base), "GLIBC_TUNABLES=glibc.malloc.arena_max=4:glibc.x=1"), // the tunable
	} {
		if got := arenaLimitExec(2, env); got != nil {
			t.Errorf("%q: re-exec with %q, want none (the operator's setting wins, and an exec'd agent never loops)", env, got)
		}
	}
	if got := arenaLimitExec(0, base); got != nil {
		t.Errorf("--malloc-arenas 0: re-exec with %q, want none (glibc's default)", got)
	}
}

func TestSysmonTickExec(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root"}
	for _, tc := range []struct {
		env  []string
		want []string // nil: no re-exec
	}{
		{base, append(slices.Clone(base), "GODEBUG="+sysmonTicking)},
		// the operator's other settings kept, in one GODEBUG
		{append(slices.Clone(base), "GODEBUG=madvdontneed=1,"), append(slices.Clone(base), "GODEBUG=madvdontneed=1,"+sysmonTicking)},
		{append(slices.Clone(base), "GODEBUG=gctrace=1", "GODEBUG=x=2"), append(slices.Clone(base), "GODEBUG=gctrace=1,x=2,"+sysmonTicking)},
		// the operator's schedtrace wins, 0 included; a re-executed agent has it
		{append(slices.Clone(base), "GODEBUG=schedtrace=0"), nil},
		{append(slices.Clone(base), "GODEBUG=gctrace=1, schedtrace=1000"), nil},
		{append(slices.Clone(base), "GODEBUG="+sysmonTicking), nil},
	} {
		if got := sysmonTickExec(false, tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("%q: re-exec with %q, want %q", tc.env, got, tc.want)
		}
	}
	if got := sysmonTickExec(true, base); got != nil {
		t.Errorf("--%s: re-exec with %q, want none (Go's default)", sysmonSleepFlag, got)
	}
}

func TestReexecEnvJoinsBothOrNone(t *testing.T) {
	base := []string{"PATH=/bin"}
	want := []string{"PATH=/bin", "MALLOC_ARENA_MAX=2", "GODEBUG=" + sysmonTicking}
	if got := reexecEnv(2, false, base); !slices.Equal(got, want) {
		t.Errorf("both: %q, want %q", got, want)
	}
	if got := reexecEnv(2, false, want); got != nil {
		t.Errorf("a re-executed agent re-executes again with %q", got)
	}
	if got := reexecEnv(0, true, base); got != nil {
		t.Errorf("neither asked: re-exec with %q", got)
	}
}

// The runtime behaviour sysmonTicking relies on: with it, the runtime's
// monitor of an idle Go process keeps waking (every 10 ms at most); without
// it, the monitor sleeps until the next timer. Counted as the voluntary
// context switches of every thread of an idle child process (this test
// binary, re-run as idleChild) over half a second. If a Go release changes
// the rule, this test says so.
func TestSysmonTickingKeepsTheMonitorAwake(t *testing.T) {
	wakes := func(godebug string) uint64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIdleChild$")
		cmd.Env = []string{"TRIAGE_IDLE_CHILD=1", "GODEBUG=" + godebug}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GODEBUG=") { // the runtime reads the first
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		time.Sleep(300 * time.Millisecond) // past its start
		before := voluntarySwitches(t, cmd.Process.Pid)
		time.Sleep(500 * time.Millisecond)
		return voluntarySwitches(t, cmd.Process.Pid) - before
	}
	ticking, sleeping := wakes(sysmonTicking), wakes("")
	t.Logf("voluntary context switches of an idle process in 0.5 s: %d with %s, %d without", ticking, sysmonTicking, sleeping)
	if ticking < 20 || sleeping > 10 {
		t.Errorf("with %s %d switches (want 20 or more: sysmon ticks at least every 10 ms), without %d (want 10 or fewer: it sleeps)", sysmonTicking, ticking, sleeping)
	}
}

// TestIdleChild is the idle process of TestSysmonTickingKeepsTheMonitorAwake.
func TestIdleChild(t *testing.T) {
	if os.Getenv("TRIAGE_IDLE_CHILD") != "1" {
		t.Skip("the child of TestSysmonTickingKeepsTheMonitorAwake")
	}
	time.Sleep(10 * time.Second)
}

// voluntarySwitches sums voluntary_ctxt_switches over pid's threads.
func voluntarySwitches(t *testing.T, pid int) uint64 {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				c, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// `triage agent` runs with at most agent.DefaultMallocArenas arenas and
// the runtime's monitor ticking: it re-executes itself with
// MALLOC_ARENA_MAX and GODEBUG (same PID), and the C heap's arena count on
// /metrics stays within the bound; --go-sysmon-sleep leaves GODEBUG alone.
// Without the re-exec every Go thread has an arena of its own from the
// start (5 and more here), so the count fails this test.
func TestAgentStartsWithArenaLimit(t *testing.T) {
	bin := testenv.BuildTriage(t)
	for _, tc := range []struct {
		env         string // MALLOC_ARENA_MAX in the environment; "" = unset
		sysmonSleep string // TRIAGE_GO_SYSMON_SLEEP; "" = unset
		want        int
		wantDebug   []string // GODEBUG the agent runs with
	}{
		{"", "", agent.DefaultMallocArenas, []string{"GODEBUG=" + sysmonTicking}},
		{"3", "true", 3, nil},
	} {
		t.Run("MALLOC_ARENA_MAX="+tc.env+",sleep="+tc.sysmonSleep, func(t *testing.T) {
			p := startAgentWithEnv(t, bin, map[string]string{"MALLOC_ARENA_MAX": tc.env, "GODEBUG": "", "TRIAGE_GO_SYSMON_SLEEP": tc.sysmonSleep})
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
			if err != nil {
				t.Fatal(err)
			}
			var got, debug []string
			for _, kv := range bytes.Split(environ, []byte{0}) {
				if strings.HasPrefix(string(kv), "MALLOC_ARENA_MAX=") {
					got = append(got, string(kv))
				}
				if strings.HasPrefix(string(kv), "GODEBUG=") {
					debug = append(debug, string(kv))
				}
			}
			if want := fmt.Sprintf("MALLOC_ARENA_MAX=%d", tc.want); !slices.Equal(got, []string{want}) {
				t.Errorf("agent %d runs with %q, want [%s]", p.PID, got, want)
			}
			if !slices.Equal(debug, tc.wantDebug) {
				t.Errorf("agent %d runs with %q, want %q", p.PID, debug, tc.wantDebug)
			}
			arenas, ok := p.Scrape()["triage_c_heap_arenas"]
			if !ok || arenas < 1 || arenas > float64(tc.want) {
				t.Errorf("triage_c_heap_arenas = %v (present %v), want 1 to %d", arenas, ok, tc.want)
			}
		})
	}
}

// `triage agent` runs with its default scheduling slice where the kernel
// has custom slices, or with the one it is given, and at the niceness it is
// given; /metrics says which, read from the kernel.
func TestAgentRunsWithItsSchedulingSlice(t *testing.T) {
	if !kernelHasCustomSlices(t) {
		t.Skip("kernel without EEVDF custom slices (Linux 6.12+): the agent keeps the kernel's slice")
	}
	bin := testenv.BuildTriage(t)
	for _, tc := range []struct {
		slice, nice    string // TRIAGE_SCHED_SLICE and TRIAGE_NICE; "" = the default
		want, wantNice float64
	}{
		{"", "", agent.DefaultSchedSlice.Seconds(), agent.DefaultNice},
		{"1ms", "5", 0.001, 5}, // a higher niceness needs no privilege
	} {
		t.Run("slice="+tc.slice+",nice="+tc.nice, func(t *testing.T) {
			p := startAgentWithEnv(t, bin, map[string]string{"TRIAGE_SCHED_SLICE": tc.slice, "TRIAGE_NICE": tc.nice})
			m := p.Scrape()
			if got, ok := m["triage_sched_slice_seconds"]; !ok || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("triage_sched_slice_seconds = %v (present %v), want %v", got, ok, tc.want)
			}
			if got, ok := m["triage_sched_nice"]; !ok || got != tc.wantNice {
				t.Errorf("triage_sched_nice = %v (present %v), want %v", got, ok, tc.wantNice)
			}
		})
	}
}

// kernelHasCustomSlices says whether this kernel takes a slice asked for
// in sched_attr (asked of a child thread of ours that ends at once).
func kernelHasCustomSlices(t *testing.T) bool {
	t.Helper()
	ok := make(chan bool, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			ok <- false
			return
		}
		attr.Size = unix.SizeofSchedAttr
		attr.Runtime = 2_000_000
		if unix.SchedSetAttr(0, attr, 0) != nil {
			ok <- false
			return
		}
		got, err := unix.SchedGetAttr(0, 0)
		ok <- err == nil && got.Runtime == 2_000_000
	}()
	return <-ok
}

// startAgentWithEnv starts the agent binary bin (no eBPF) with env's
// variables set, an empty value unset, each restored after the test, and
// stops it when the test ends.
func startAgentWithEnv(t *testing.T, bin string, env map[string]string) *agentproc.Process {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v) // restored after the test
		if v == "" {
			os.Unsetenv(k)
		}
	}
	p, err := agentproc.Start(context.Background(), agentproc.Config{Bin: bin, Dir: t.TempDir(), NoEBPF: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}
