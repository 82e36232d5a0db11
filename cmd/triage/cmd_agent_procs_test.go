package main

import (
	"context"
	"fmt"
	"os"
	"testing"

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
