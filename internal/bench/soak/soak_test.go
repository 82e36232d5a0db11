package soak

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/faulttest"
	"github.com/triage-agent/triage/internal/testenv"
)

// A short soak against a real `triage agent` process (built here) with
// every part of the load: every decision answered, every acknowledged
// outcome in the log, hot reloads swapped in, snapshots, churn and
// malformed frames all served, and the figures filled.
func TestShortSoak(t *testing.T) {
	faulttest.Long(t, "a soak run")
	bin := testenv.BuildTriage(t)
	cfg := Config{
		Duration: 14 * time.Second, Warmup: 4 * time.Second, Rate: 400, Clients: 4, Subscribers: 2,
		Churn: 10, MalformedRate: 5, ReloadEvery: 2 * time.Second, AgentBin: bin,
		// eBPF and the profiler where the machine allows (root), as the bench runs them.
		NoEBPF: os.Geteuid() != 0,
	}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.JSON()
	t.Logf("%s", b)
	d := r.Detail
	t.Logf("snapshots %d, churn %d (%d failed), malformed answered %d, reloads %d swapped %d, probes %d, windows %d",
		d.Snapshots, d.ChurnConnects, d.ChurnFailures, d.MalformedSent, d.Reloads, d.Swaps, d.ProbesAttached, d.FlamegraphWindows)
	if r.DecideErrors != 0 || r.Decisions < 1000 {
		t.Errorf("%d decisions, %d errors", r.Decisions, r.DecideErrors)
	}
	if r.LostRecords != 0 || r.Outcomes != r.Decisions || r.ExperienceRecords < r.Outcomes {
		t.Errorf("%d outcomes of %d decisions, %d records, %d lost", r.Outcomes, r.Decisions, r.ExperienceRecords, r.LostRecords)
	}
	if d.Swaps < 3 || d.ReloadFails != 0 {
		t.Errorf("%d model files written, %d swapped in, %d refused", d.Reloads, d.Swaps, d.ReloadFails)
	}
	if d.Snapshots == 0 || d.ChurnConnects < 50 || d.ChurnFailures != 0 || d.MalformedSent < 20 {
		t.Errorf("snapshots %d, churn %d (%d failed), malformed frames answered %d", d.Snapshots, d.ChurnConnects, d.ChurnFailures, d.MalformedSent)
	}
	// What the load leaves behind: with no load, the agent runs the
	// goroutines it ran before the load.
	t.Logf("goroutines with no load: %d before, %d after", d.GoroutinesIdleBefore, d.GoroutinesIdleAfter)
	if d.GoroutinesIdleBefore <= 0 || d.GoroutinesIdleAfter > d.GoroutinesIdleBefore {
		t.Errorf("goroutines with no load: %d before the load, %d after it", d.GoroutinesIdleBefore, d.GoroutinesIdleAfter)
	}
	if r.RSSMiBStart <= 0 || r.GoroutinesStart <= 0 || r.FDsStart <= 0 || r.P99Us <= 0 || len(d.Samples) < 10 {
		t.Errorf("figures not filled: %+v (%d samples)", r, len(d.Samples))
	}
}
