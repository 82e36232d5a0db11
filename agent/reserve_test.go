package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// The work says whether the node is contended where the upstream reports
// service times: an agent whose kernel says nothing (no eBPF) raises the
// background reserve once the reported tasks ran twice their described
// cost, and lowers it again once a window of tasks ran as described. The
// reserve travels in the node state and in every decide answer. On two
// workers the contended reserve, sized to the foreground, is one of them
// whatever the foreground: a model that answers 4 keeps one.
func TestReportedSlowdownMovesTheBackgroundReserve(t *testing.T) {
	ta := foregroundAgent(t, 2)
	cl := ta.dial(t)
	ctx := context.Background()
	reserveIs := func(want float64, what string) {
		t.Helper()
		stateReserveIs(t, ta, want, what)
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

// On a contended node the reserve is sized to the foreground's recent
// load (policy.SizeReserve): with the slowdown at 2 on eight workers, the
// contended half while a second's foreground work is heavy, the calm
// quarter once no foreground task has been decided for a second, and three
// of eight for half a worker of foreground work.
func TestContendedReserveIsSizedToTheForeground(t *testing.T) {
	ta := foregroundAgent(t, 8)
	cl := ta.dial(t)
	ctx := context.Background()
	// 2 000 ms of foreground work (every task at 4), each ran twice its cost.
	ts := make([]*wire.Task, policy.MinSlowdownSamples)
	outs := make([]*wire.Outcome, len(ts))
	for i := range ts {
		ts[i] = &wire.Task{Id: uint64(i + 1), Class: "scoring", SlaMs: 1000, CostMs: 2000 / float32(len(ts))}
		svc := 2 * ts[i].CostMs
		outs[i] = &wire.Outcome{Id: ts[i].Id, LatencyMs: svc, ServiceMs: svc, SlaMet: true}
	}
	if _, err := cl.Decide(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
		t.Fatal(err)
	}
	stateReserveIs(t, ta, policy.ContendedReserve, "a heavy foreground at slowdown 2: the contended half")
	stateReserveIs(t, ta, policy.CalmReserve, "no foreground for a second at slowdown 2: the calm quarter")
	if got := ta.asm.Slowdown(); got != 2 {
		t.Fatalf("slowdown %v, want 2 still", got)
	}
	// 500 ms of foreground work: 0.5 workers × slowdown 2 × 3 = 3 of 8.
	half := make([]*wire.Task, 25)
	for i := range half {
		half[i] = &wire.Task{Id: uint64(1_000 + i), Class: "scoring", SlaMs: 1000, CostMs: 20}
	}
	if _, err := cl.Decide(ctx, half); err != nil {
		t.Fatal(err)
	}
	stateReserveIs(t, ta, 3.0/8, "half a worker of foreground at slowdown 2: three of eight")
}

// foregroundAgent is an agent on workers workers whose kernel says nothing
// (no eBPF) and whose model answers 4 to every task, unguarded: all of its
// decisions are foreground.
func foregroundAgent(t *testing.T, workers int) *testAgent {
	t.Helper()
	model := filepath.Join(t.TempDir(), "model.onnx")
	writeModel(t, model, alwaysMLP(4), "always-4")
	return startAgent(t, Config{NoEBPF: true, Workers: workers, ModelPath: model, Guard: GuardNone})
}

// stateReserveIs waits until the agent's node state carries the reserve
// want.
func stateReserveIs(t *testing.T, ta *testAgent, want float64, what string) {
	t.Helper()
	waitFor(t, 5*time.Second, what, func() bool {
		return float64(ta.State().GetBackgroundReserve()) == want
	})
}

// With the reserve the agent sends the short limit (policy.ShortBackgroundMs):
// the tightest SLA of the last second's foreground over the slowdown, in
// the node state and in every decide answer; none once no foreground task
// has been decided for a second. The urgent limit beside it
// (policy.UrgentBackgroundSLAMs) is four times that SLA, whatever the
// slowdown, and goes with it.
func TestShortLimitFollowsTheForegroundsTightestSLA(t *testing.T) {
	ta := foregroundAgent(t, 4)
	cl := ta.dial(t)
	ctx := context.Background()
	ts := tasks(0, policy.MinSlowdownSamples) // SLAs of 20, 200 and 2 000 ms, all decided at 4
	if _, err := cl.Decide(ctx, ts); err != nil {
		t.Fatal(err)
	}
	outs := make([]*wire.Outcome, len(ts))
	for i, task := range ts {
		svc := 2 * task.CostMs
		outs[i] = &wire.Outcome{Id: task.Id, LatencyMs: svc, ServiceMs: svc, SlaMet: true}
	}
	if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a short limit of 20 ms over slowdown 2", func() bool {
		return ta.State().GetBackgroundShortMs() == 10
	})
	resp, err := cl.DecideRemote(ctx, tasks(3_000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetBackgroundShortMs(); got != 10 {
		t.Fatalf("decide answer's short limit %v ms, want 10", got)
	}
	if got := cl.BackgroundShortMs(); got != 10 {
		t.Fatalf("the client keeps %v ms, want 10", got)
	}
	if got, st := resp.GetBackgroundUrgentSlaMs(), ta.State().GetBackgroundUrgentSlaMs(); got != 80 || st != 80 {
		t.Fatalf("urgent limit %v ms in the answer, %v ms in the state; want 80 (four times 20 ms)", got, st)
	}
	if got := cl.BackgroundUrgentSLAMs(); got != 80 {
		t.Fatalf("the client keeps an urgent limit of %v ms, want 80", got)
	}
	waitFor(t, 5*time.Second, "no short or urgent limit a second after the last foreground task", func() bool {
		st := ta.State()
		return st.GetBackgroundShortMs() == 0 && st.GetBackgroundUrgentSlaMs() == 0
	})
}

// The wire's "none held" is a share the policy's rounding reads as no
// worker (what both of the project's executors apply).
func TestNoReserveHoldsNoWorker(t *testing.T) {
	share, ok := wire.ReserveShare(wire.ReserveField(0))
	if !ok {
		t.Fatal("the wire's none refused by the client's reading")
	}
	for _, workers := range []int{1, 2, 4, 64, 4096, 999_999} {
		if held := policy.ReserveWorkers(share, workers); held != 0 {
			t.Errorf("%d workers: none held reads as %d workers", workers, held)
		}
	}
}
