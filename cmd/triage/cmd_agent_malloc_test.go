package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

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

// `triage agent` runs with at most agent.DefaultMallocArenas arenas: it
// re-executes itself with MALLOC_ARENA_MAX (same PID), and the C heap's
// arena count on /metrics stays within it. Without the re-exec every Go
// thread has an arena of its own from the start (5 and more here), so the
// count fails this test.
func TestAgentStartsWithArenaLimit(t *testing.T) {
	bin := testenv.BuildTriage(t)
	for _, tc := range []struct {
		env  string // MALLOC_ARENA_MAX in the environment; "" = unset
		want int
	}{{"", agent.DefaultMallocArenas}, {"3", 3}} {
		t.Run("MALLOC_ARENA_MAX="+tc.env, func(t *testing.T) {
			if tc.env == "" {
				t.Setenv("MALLOC_ARENA_MAX", "") // restored after the test
				os.Unsetenv("MALLOC_ARENA_MAX")
			} else {
				t.Setenv("MALLOC_ARENA_MAX", tc.env)
			}
			p, err := agentproc.Start(context.Background(), agentproc.Config{Bin: bin, Dir: t.TempDir(), NoEBPF: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range bytes.Split(environ, []byte{0}) {
				if strings.HasPrefix(string(kv), "MALLOC_ARENA_MAX=") {
					got = append(got, string(kv))
				}
			}
			if want := fmt.Sprintf("MALLOC_ARENA_MAX=%d", tc.want); !slices.Equal(got, []string{want}) {
				t.Errorf("agent %d runs with %q, want [%s]", p.PID, got, want)
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
			if tc.slice != "" {
				t.Setenv("TRIAGE_SCHED_SLICE", tc.slice)
			}
			if tc.nice != "" {
				t.Setenv("TRIAGE_NICE", tc.nice)
			}
			p, err := agentproc.Start(context.Background(), agentproc.Config{Bin: bin, Dir: t.TempDir(), NoEBPF: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
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
