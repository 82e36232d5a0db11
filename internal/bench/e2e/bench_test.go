package e2e

import (
	"context"
	"slices"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/train"
)

// Bench runs FIFO, the baselines, then the agent; with AgentFirst the
// agent right after FIFO. Either way the agent's CPU is reported while it
// served and while it served no one (the FIFO run).
func TestBenchRunsTheAgentLastOrFirst(t *testing.T) {
	bin := testenv.BuildTriage(t)
	sc, err := train.LoadScenario(smallScenario)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first bool
		want  []string
	}{
		{false, []string{"fifo", "reserve-rule", "agent"}},
		{true, []string{"fifo", "agent", "reserve-rule"}},
	} {
		var order []string
		rep, err := Bench(context.Background(), BenchConfig{
			Scenario: sc, TimeScale: 1, Baseline: "reserve-rule", AgentBin: bin, NoEBPF: true, AgentFirst: tc.first,
			OnRun: func(r *Result) { order = append(order, r.Label) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(order, tc.want) {
			t.Errorf("AgentFirst %v: runs %q, want %q", tc.first, order, tc.want)
		}
		n := len(sc.Arrivals(sc.Seed))
		if rep.Agent == nil || rep.Agent.Label != "agent" || rep.Agent.Metrics.Tasks != n || rep.Stats.Decisions != n {
			t.Errorf("AgentFirst %v: the agent's run is not the report's: %+v, %d decisions", tc.first, rep.Agent, rep.Stats.Decisions)
		}
		t.Logf("AgentFirst %v: agent CPU %.3f%% serving, %.3f%% idle", tc.first, rep.Stats.CPUPercent, rep.Stats.IdleCPUPercent)
		// Serving every task costs the agent more than serving no one:
		// an idle figure read over the wrong run (the agent's) fails this.
		if rep.Stats.CPUPercent <= 0 || rep.Stats.IdleCPUPercent >= rep.Stats.CPUPercent {
			t.Errorf("AgentFirst %v: agent CPU %.3f%% serving, %.3f%% idle", tc.first, rep.Stats.CPUPercent, rep.Stats.IdleCPUPercent)
		}
	}
}
