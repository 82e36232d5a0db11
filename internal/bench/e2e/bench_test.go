package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
)

// Bench runs FIFO, the baselines, then the agent; with AgentFirst the
// agent right after FIFO. Either way the agent's CPU is reported while it
// served and while it served no one (the FIFO run). AblateKernel adds a
// last run by a second agent blind to the kernel, in the evaluation as
// agent-ablated, the report's figures staying the first agent's.
func TestBenchRunsTheAgentLastOrFirst(t *testing.T) {
	bin := testenv.BuildTriage(t)
	sc, err := train.LoadScenario(smallScenario)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first, ablate bool
		want          []string
	}{
		{false, false, []string{"fifo", "reserve-rule", "agent"}},
		{true, false, []string{"fifo", "agent", "reserve-rule"}},
		{false, true, []string{"fifo", "reserve-rule", "agent", "agent-ablated"}},
	} {
		var order []string
		keep := t.TempDir()
		rep, err := Bench(context.Background(), BenchConfig{
			Scenario: sc, TimeScale: 1, Baseline: "reserve-rule", AgentBin: bin, NoEBPF: true, AgentFirst: tc.first, AblateKernel: tc.ablate,
			KeepDir: keep, OnRun: func(r *Result) { order = append(order, r.Label) },
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
		// The table lists the agent after the baselines whatever the order
		// of the runs, and the ablated agent after it.
		rows := []string{"fifo", "reserve-rule", "agent"}
		if tc.ablate {
			rows = append(rows, "agent-ablated")
		}
		if !slices.Equal(rep.Evaluation.Order, rows) {
			t.Errorf("AgentFirst %v: evaluation rows %q, want %q", tc.first, rep.Evaluation.Order, rows)
		}
		if ab := rep.AgentAblated; tc.ablate != (ab != nil) || ab != nil && (ab.Label != "agent-ablated" || ab.Metrics.Tasks != n ||
			rep.Evaluation.Policies["agent-ablated"].Tasks != n || rep.Evaluation.Policies["agent"].SLAAttainment != rep.Agent.Metrics.SLAAttainment) {
			t.Errorf("AblateKernel %v: ablated run %+v", tc.ablate, ab)
		}
		if tc.ablate {
			// The second agent decided blind: every state it logged holds
			// the kernel features neutral, where the first agent's read
			// the node (procfs here: CPU utilisation at least).
			if n := kernelFeaturesRead(t, filepath.Join(keep, "ablated", "experience")); n != 0 {
				t.Errorf("the ablated agent logged %d states with a kernel feature read", n)
			}
			if n := kernelFeaturesRead(t, filepath.Join(keep, "experience")); n == 0 {
				t.Error("the agent logged no state with a kernel feature read: the blind one's check shows nothing")
			}
		}
		t.Logf("AgentFirst %v: agent CPU %.3f%% serving, %.3f%% idle", tc.first, rep.Stats.CPUPercent, rep.Stats.IdleCPUPercent)
		// Serving every task costs the agent more than serving no one:
		// an idle figure read over the wrong run (the agent's) fails this.
		if rep.Stats.CPUPercent <= 0 || rep.Stats.IdleCPUPercent >= rep.Stats.CPUPercent {
			t.Errorf("AgentFirst %v: agent CPU %.3f%% serving, %.3f%% idle", tc.first, rep.Stats.CPUPercent, rep.Stats.IdleCPUPercent)
		}
		// The agent's memory was read over its run, not only at its end:
		// a mean and a largest reading, neither over the process's peak.
		st := rep.Stats
		t.Logf("AgentFirst %v: RSS %.1f MiB at the end, mean %.1f, largest %.1f, peak %.1f", tc.first, st.RSSMiB, st.RSSMiBMean, st.RSSMiBMax, st.PeakRSSMiB)
		if !(st.RSSMiBMean > 0 && st.RSSMiBMean <= st.RSSMiBMax && st.RSSMiBMax <= st.PeakRSSMiB) {
			t.Errorf("AgentFirst %v: RSS over the run: mean %.1f, largest %.1f, peak %.1f MiB: want 0 < mean <= largest <= peak",
				tc.first, st.RSSMiBMean, st.RSSMiBMax, st.PeakRSSMiB)
		}
	}
}

// kernelFeaturesRead counts the experience records in dir whose state has
// a kernel feature off its neutral value; a log with no record fails.
func kernelFeaturesRead(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	st, err := experience.ReadDirWith(dir, experience.ReadOptions{}, func(r experience.Record) error {
		for _, f := range policy.KernelFeatures {
			if r.State[f] != policy.Neutral[f] {
				n++
				break
			}
		}
		return nil
	})
	if err != nil || st.Records == 0 {
		t.Fatalf("reading the experience log in %s: %d records, %v", dir, st.Records, err)
	}
	return n
}
