package agent

import (
	"context"
	"testing"
	"time"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// The work says whether the node is contended where the upstream reports
// service times: an agent whose kernel says nothing (no eBPF) raises the
// background reserve once the reported tasks ran twice their described
// cost, and lowers it again once a window of tasks ran as described. The
// reserve travels in the node state and in every decide answer.
func TestReportedSlowdownMovesTheBackgroundReserve(t *testing.T) {
	ta := startAgent(t, Config{NoEBPF: true})
	cl := ta.dial(t)
	ctx := context.Background()
	reserveIs := func(want float64, what string) {
		t.Helper()
		waitFor(t, 5*time.Second, what, func() bool {
			return float64(ta.State().GetBackgroundReserve()) == want
		})
		resp, err := cl.DecideRemote(ctx, tasks(10_000, 1))
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(resp.GetBackgroundReserve()); got != want {
			t.Fatalf("%s: decide answer's reserve %v, want %v", what, got, want)
		}
	}
	reserveIs(policy.CalmReserve, "calm reserve before any outcome")

	// report decides n tasks from id from and reports each ran factor
	// times its described cost.
	report := func(from, n int, factor float32) {
		t.Helper()
		ts := tasks(from, n)
		if _, err := cl.Decide(ctx, ts); err != nil {
			t.Fatal(err)
		}
		outs := make([]*wire.Outcome, len(ts))
		for i, task := range ts {
			svc := task.CostMs * factor
			outs[i] = &wire.Outcome{Id: task.Id, LatencyMs: svc, ServiceMs: svc, SlaMet: svc <= task.SlaMs}
		}
		if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
			t.Fatal(err)
		}
	}
	report(0, policy.MinSlowdownSamples, 2)
	if got := ta.asm.Slowdown(); got != 2 {
		t.Fatalf("slowdown after %d tasks at twice their cost: %v, want 2", policy.MinSlowdownSamples, got)
	}
	reserveIs(policy.ContendedReserve, "contended reserve at slowdown 2")

	report(1_000, policy.SlowdownWindowSize, 1)
	if got := ta.asm.Slowdown(); got != 1 {
		t.Fatalf("slowdown after a window of tasks at their cost: %v, want 1", got)
	}
	reserveIs(policy.CalmReserve, "calm reserve at slowdown 1")
}
