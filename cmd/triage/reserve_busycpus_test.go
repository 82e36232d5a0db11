package main

import (
	"context"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// On CPUs that six spinning processes oversubscribe (the run queue read by
// eBPF), an agent whose executor has 6 workers on 4 CPUs holds back the
// half, 3 workers, while a foreground is there; once none has been decided
// for policy.ForegroundGoneMs it holds back only the 2 beyond the CPUs
// (policy.ReserveOnBusyCPUs), and a foreground decision brings the half
// back at once, ahead of the next snapshot's tick.
func TestAgentLetsTheBackgroundRunOneTaskPerCPUOnceTheForegroundHasGone(t *testing.T) {
	stopLoad := contendedNode(t, "busy-cpus")
	defer stopLoad()
	const workers, cpus = 6, 4
	gone := time.Duration(policy.ForegroundGoneMs) * time.Millisecond
	start := time.Now()
	a, stop := startTestAgent(t, agent.Config{ExperienceDir: "-", StateInterval: 3 * time.Second, Workers: workers, CPUs: cpus})
	defer stop()

	held := func() (int, *wire.NodeState) {
		st := a.State()
		return policy.ReserveWorkers(float64(st.GetBackgroundReserve()), workers), st
	}
	deadline := start.Add(gone + 30*time.Second)
	for {
		n, st := held()
		if n == workers-cpus {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no foreground for %v on oversubscribed CPUs: reserve %v holds %d of %d workers, want %d (run-queue p99 %.0f µs)",
				time.Since(start), st.GetBackgroundReserve(), n, workers, workers-cpus, st.GetRunqP99Us())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if waited := time.Since(start); waited < gone {
		t.Fatalf("bounded after %v, before the foreground's bound %v", waited, gone)
	}
	_, st := held()
	t.Logf("bounded to %d of %d workers after %v (run-queue p99 %.0f µs)", workers-cpus, workers, time.Since(start), st.GetRunqP99Us())

	cl, err := client.Dial(context.Background(), a.QUICAddr().String(), client.Config{PinSHA256: a.Fingerprint(), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.DecideRemote(context.Background(), []*wire.Task{{Id: 1, Class: "api", SlaMs: 20, CostMs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if level := resp.GetDecisions()[0].GetPriority(); level < 1 {
		t.Fatalf("a 2 ms task of 20 ms SLA with an empty queue decided at %d, want the foreground", level)
	}
	// The half: the spinners keep the run queue long, and no outcome has
	// told the agent the work's slowdown.
	for deadline := time.Now().Add(300 * time.Millisecond); ; time.Sleep(20 * time.Millisecond) {
		n, st := held()
		if n == policy.ReserveWorkers(policy.ContendedReserve, workers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a foreground decision: reserve %v holds %d of %d workers, want the half's %d (run-queue p99 %.0f µs)",
				st.GetBackgroundReserve(), n, workers, policy.ReserveWorkers(policy.ContendedReserve, workers), st.GetRunqP99Us())
		}
	}
}
