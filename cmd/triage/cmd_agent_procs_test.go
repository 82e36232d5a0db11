package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/internal/bench/agentproc"
	"github.com/triage-agent/triage/internal/testenv"
)

// `triage agent` runs on agent.DefaultMaxProcs Ps unless GOMAXPROCS is set
// in its environment, as the Go runtime reports it on /metrics.
func TestAgentRunsOnItsMaxProcs(t *testing.T) {
	bin := testenv.BuildTriage(t)
	for _, tc := range []struct {
		env  string // GOMAXPROCS in the environment; "" = unset
		args []string
		want float64
	}{
		{"", nil, agent.DefaultMaxProcs},
		{"", []string{"--max-procs", "3"}, 3},
		{"2", nil, 2},
	} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%q/args=%q", tc.env, tc.args), func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.env) // restored after the test
			if tc.env == "" {
				os.Unsetenv("GOMAXPROCS")
			}
			p, err := agentproc.Start(context.Background(), agentproc.Config{Bin: bin, Dir: t.TempDir(), NoEBPF: true, ExtraArgs: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			got, ok := p.Scrape()["go_sched_gomaxprocs_threads"]
			if !ok || got != tc.want {
				t.Errorf("args %q: go_sched_gomaxprocs_threads %v (found %v), want %v", tc.args, got, ok, tc.want)
			}
		})
	}
}

// By default (agent.DefaultWindowMaxProcs, 2) the agent's one P becomes two
// while a flame-graph window is built, and one again after; with
// --window-max-procs 1 it stays one throughout (as the runtime reports it
// on /metrics, polled through windows of a second).
func TestAgentGivesItsWindowsTheirProcs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the flame-graph recorder needs root (CAP_BPF, CAP_PERFMON)")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the runtime has no second P to give")
	}
	bin := testenv.BuildTriage(t)
	for _, tc := range []struct {
		args []string
		want map[float64]bool // the values seen
	}{
		{nil, map[float64]bool{1: true, 2: true}},
		{[]string{"--window-max-procs", "1"}, map[float64]bool{1: true}},
	} {
		t.Run(fmt.Sprintf("args=%q", tc.args), func(t *testing.T) {
			os.Unsetenv("GOMAXPROCS")
			args := append([]string{"--flamegraph-interval", "1s"}, tc.args...)
			p, err := agentproc.Start(context.Background(), agentproc.Config{Bin: bin, Dir: t.TempDir(), ExtraArgs: args})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			seen := map[float64]bool{}
			windows, backToOne := 0.0, false
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && windows < 4; time.Sleep(5 * time.Millisecond) {
				m := p.Scrape()
				procs := m["go_sched_gomaxprocs_threads"]
				backToOne = backToOne || (seen[2] && procs == 1)
				seen[procs] = true
				windows = m["triage_flamegraph_windows"]
			}
			if windows < 2 {
				t.Fatalf("%v windows in 20 s", windows)
			}
			if seen[2] && !backToOne {
				t.Errorf("GOMAXPROCS stayed 2 after a window")
			}
			if !maps.Equal(seen, tc.want) {
				t.Errorf("GOMAXPROCS seen %v over %v windows, want %v", seen, windows, tc.want)
			}
		})
	}
}
