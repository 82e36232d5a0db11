package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
	"github.com/triage-agent/triage/wire"
)

const smallScenario = "../../../testdata/agent/e2e-small.json"

func TestBurnRunsForItsCost(t *testing.T) {
	var stop atomic.Bool
	cpu0 := threadCPU()
	start := time.Now()
	if !burn(3*time.Millisecond, false, &stop) {
		t.Fatal("stopped without being asked")
	}
	if el := time.Since(start); el < 3*time.Millisecond {
		t.Fatalf("wall-time burn returned after %v", el)
	}
	if threadCPU() == cpu0 {
		t.Fatal("burn used no CPU")
	}
	c0 := threadCPU()
	if !burn(2*time.Millisecond, true, &stop) || threadCPU()-c0 < 2*time.Millisecond {
		t.Fatal("CPU-time burn used less than its cost")
	}
	stop.Store(true)
	if burn(time.Hour, false, &stop) {
		t.Fatal("a stopped burn ran to completion")
	}
}

// A short overload run, FIFO and with priorities over real QUIC from the
// endpoint serving the bootstrap model: every task is accounted for, and
// the priority run meets more SLAs than FIFO.
func TestRunFIFOAndPriorities(t *testing.T) {
	sc, err := train.LoadScenario(smallScenario)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fifo, err := Run(ctx, Config{Scenario: sc, TimeScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata())
	srv, err := serve.New(serve.Config{Addr: "127.0.0.1:0"}, backend.NewPolicy(d, nil))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	cl, err := client.Dial(ctx, srv.Addr().String(), client.Config{PinSHA256: srv.Fingerprint(), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pri, err := Run(ctx, Config{Scenario: sc, TimeScale: 1, Agent: cl})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(fifo)
	t.Log(pri)
	n := len(sc.Arrivals(sc.Seed))
	for _, r := range []*Result{fifo, pri} {
		if r.Metrics.Tasks != n || len(r.Outcomes) != n {
			t.Fatalf("%s: %d tasks, want %d", r.Label, r.Metrics.Tasks, n)
		}
		finished := 0
		for _, o := range r.Outcomes {
			if o.Finished {
				finished++
				if o.FinishMs < o.StartMs || o.StartMs < o.ArrivalMs-1 {
					t.Fatalf("%s: task %d starts %v finishes %v arrives %v", r.Label, o.ID, o.StartMs, o.FinishMs, o.ArrivalMs)
				}
			}
		}
		if finished == 0 {
			t.Fatalf("%s finished nothing", r.Label)
		}
	}
	if pri.DecideErrors != 0 || len(pri.DecideLatency) != n {
		t.Fatalf("decide errors %d, %d latencies for %d tasks", pri.DecideErrors, len(pri.DecideLatency), n)
	}
	if pri.Metrics.SLAAttainment <= fifo.Metrics.SLAAttainment {
		t.Fatalf("priorities met %.3f of SLAs, FIFO %.3f", pri.Metrics.SLAAttainment, fifo.Metrics.SLAAttainment)
	}
}

func TestRunNeedsScenario(t *testing.T) {
	if _, err := Run(context.Background(), Config{}); err != ErrNoScenario {
		t.Fatalf("err = %v", err)
	}
}

// A hand-written rule decides inside the executor, on real workers: the
// reserve rule's levels are applied, and background work never holds more
// than workers − BackgroundReserve workers at once, however long its queue.
func TestRuleRunKeepsTheReserve(t *testing.T) {
	sc, err := train.ParseScenario([]byte(`{"name":"e2e-reserve","seed":3,"duration_s":3,"workers":4,
	 "arrival":{"process":"poisson","rate_per_s":120},
	 "classes":[{"name":"urgent","share":0.7,"sla_ms":20,"cost_ms":{"dist":"lognormal","median":2,"p99":6}},
	            {"name":"long","share":0.3,"sla_ms":2000,"cost_ms":{"dist":"lognormal","median":60,"p99":200}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Scenario: sc, TimeScale: 1, Rule: train.ReserveRule{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.Label != "reserve-rule" || res.DecideErrors != 0 {
		t.Fatalf("label %q, %d decide errors", res.Label, res.DecideErrors)
	}
	for _, o := range res.Outcomes {
		want := 0
		if o.SLAMs < 50 {
			want = 4
		}
		if o.Level != want {
			t.Fatalf("task %d (SLA %v ms) at level %d, want %d", o.ID, o.SLAMs, o.Level, want)
		}
	}
	most := train.MostAtOnce(res.Outcomes, 0)
	if limit := sc.Workers - train.BackgroundReserve(sc.Workers); most > limit || most == 0 {
		t.Fatalf("at most %d background tasks ran at once, want 1..%d", most, limit)
	}
}

// reserveAsking answers every task with the background and asks the
// executor to leave share of the workers free, as the agent's answers do
// on a contended node (the agent's side is TestContendedNodeRaisesTheBackgroundReserve
// in cmd/triage, with eBPF, QUIC and the model for real); this checks the
// executor's side of that contract alone.
type reserveAsking struct{ share, shortMs, urgentSLAMs float64 }

func (a reserveAsking) Decide(_ context.Context, tasks []*wire.Task) (*wire.DecideResponse, error) {
	resp := &wire.DecideResponse{BackgroundReserve: float32(a.share), BackgroundShortMs: float32(a.shortMs), BackgroundUrgentSlaMs: float32(a.urgentSLAMs)}
	for _, t := range tasks {
		resp.Decisions = append(resp.Decisions, &wire.Decision{Id: t.GetId(), Priority: 0})
	}
	return resp, nil
}
func (a reserveAsking) ReportOutcomes(_ context.Context, outs []*wire.Outcome) (int, error) {
	return len(outs), nil
}
func (a reserveAsking) BackgroundHold() (share, shortMs, urgentSLAMs float64, ok bool) {
	share, ok = wire.ReserveShare(float32(a.share))
	return share, wire.ShortMs(float32(a.shortMs)), wire.UrgentSLAMs(float32(a.urgentSLAMs)), ok
}

// The executor honours the reserve its agent sends: with 4 workers, every
// task in the background and a long queue, at most 4 − 2 run at once when
// the agent asks for half, 4 − 1 when it asks for the calm quarter, and
// 4 − 1 under the half when every task is under the short limit sent with
// it (none is under 1 ms): short background work leaves the quarter; and
// all 4 under the half when every task's SLA (2 s) is within the urgent
// limit sent with it: urgent background work leaves nothing.
func TestAgentRunKeepsTheAgentsReserve(t *testing.T) {
	sc, err := train.ParseScenario([]byte(`{"name":"e2e-agent-reserve","seed":3,"duration_s":2,"workers":4,
	 "arrival":{"process":"poisson","rate_per_s":150},
	 "classes":[{"name":"long","share":1,"sla_ms":2000,"cost_ms":{"dist":"lognormal","median":30,"p99":60}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		share, shortMs, urgentSLAMs float64
		most                        int
		short                       bool // whether tasks start as short or urgent work past the hold
	}{
		{policy.ContendedReserve, 0, 0, 2, false},
		{policy.CalmReserve, 0, 0, 3, false},
		{policy.ContendedReserve, 1_000, 0, 3, true},
		{policy.ContendedReserve, 1, 0, 2, false},
		{policy.ContendedReserve, 0, 2_000, 4, true},
		{policy.ContendedReserve, 0, 1_999, 2, false},
	} {
		res, err := Run(context.Background(), Config{Scenario: sc, TimeScale: 1, Agent: reserveAsking{c.share, c.shortMs, c.urgentSLAMs}})
		if err != nil {
			t.Fatal(err)
		}
		if got := train.MostAtOnce(res.Outcomes, 0); got != c.most {
			t.Errorf("agent asking for %v, short under %v ms, urgent under %v ms SLA: at most %d background tasks at once, want %d", c.share, c.shortMs, c.urgentSLAMs, got, c.most)
		}
		// Only the short and urgent limits start a task past the hold, and they do.
		if c.short != (res.ShortStarts > 0) {
			t.Errorf("agent asking for %v, short under %v ms, urgent under %v ms SLA: %d short or urgent starts past the hold", c.share, c.shortMs, c.urgentSLAMs, res.ShortStarts)
		}
	}
}
