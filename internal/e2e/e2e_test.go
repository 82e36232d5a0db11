package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
)

const smallScenario = "../../testdata/agent/e2e-small.json"

func TestPriorityQueueContract(t *testing.T) {
	q := newPriorityQueue()
	push := func(idx, level int, deadline, expected float64) {
		q.push(&queued{idx: idx, level: level, key: deadline, seq: idx, deadlineMs: deadline, expectedMs: expected})
	}
	push(0, 0, 100, 1)  // low level
	push(1, 3, 500, 1)  // high level, late deadline
	push(2, 3, 200, 1)  // high level, earlier deadline: first
	push(3, 4, 5, 10)   // highest level but cannot make it (now 0 + 10 > 5): yields
	push(4, 3, 200, 1)  // ties with 2: arrival order
	push(5, 1, 60, 100) // late at level 1, longer than 3
	var got []int
	for q.len() > 0 {
		got = append(got, q.pop(0).idx)
	}
	want := []int{2, 4, 1, 0, 3, 5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("served %v, want %v", got, want)
		}
	}
	if q.pop(0) != nil {
		t.Fatal("pop from empty queue")
	}
}

func TestFIFOQueueOrder(t *testing.T) {
	q := &fifoQueue{}
	for i, arr := range []float64{3, 1, 2, 1} {
		q.push(&queued{idx: i, key: arr, seq: i})
	}
	var got []int
	for q.len() > 0 {
		got = append(got, q.pop(0).idx)
	}
	if got[0] != 1 || got[1] != 3 || got[2] != 2 || got[3] != 0 {
		t.Fatalf("FIFO served %v", got)
	}
}

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
	srv, err := serve.New(serve.Config{Addr: "127.0.0.1:0"}, serve.NewPolicyBackend(d, nil))
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
