package main

import (
	"context"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// On a calm node, an agent that has decided no foreground task for
// policy.ForegroundGoneMs tells its clients to hold nothing back from
// background work: its run queue, read by eBPF, says the CPUs have room,
// and the quarter would protect no one (policy.NoForegroundToProtect). A
// foreground decision brings the quarter back at once, ahead of the next
// snapshot's tick. The same agent blind to
// the kernel (--ablate kernel) keeps the quarter: the release is the
// kernel's.
func TestAgentReleasesAReserveThatProtectsNoOne(t *testing.T) {
	testenv.RequireBPF(t, "the agent's run-queue probes need root")
	gone := time.Duration(policy.ForegroundGoneMs) * time.Millisecond

	blind, stop := startTestAgent(t, agent.Config{ExperienceDir: "-", StateInterval: 50 * time.Millisecond, AblateKernel: true})
	time.Sleep(gone + time.Second)
	st := blind.State()
	stop()
	if got := st.GetBackgroundReserve(); got != policy.CalmReserve {
		t.Fatalf("blind to the kernel, no foreground for %v: reserve %v, want the quarter %v", gone+time.Second, got, policy.CalmReserve)
	}

	// Snapshots 3 s apart: the quarter must come back with the foreground
	// decision, not with the next tick.
	start := time.Now() // the agent's clock of the foreground starts after this
	a, stop := startTestAgent(t, agent.Config{ExperienceDir: "-", StateInterval: 3 * time.Second})
	defer stop()
	// The node's own load may push the run-queue p99 over the line for a
	// while (a test binary beside it): the reserve is released once it
	// reads short, within the deadline.
	deadline := start.Add(gone + 60*time.Second)
	for {
		st = a.State()
		if st.GetBackgroundReserve() == wire.NoReserve {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no foreground for %v: reserve %v, want none, %v (run-queue p99 %.0f µs, sources %v)", time.Since(start), st.GetBackgroundReserve(), wire.NoReserve, st.GetRunqP99Us(), st.GetSources())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if waited := time.Since(start); waited < gone {
		t.Fatalf("released after %v, before the foreground's bound %v", waited, gone)
	}
	t.Logf("released after %v (run-queue p99 %.0f µs)", time.Since(start), st.GetRunqP99Us())

	cl, err := client.Dial(context.Background(), a.QUICAddr().String(), client.Config{PinSHA256: a.Fingerprint(), ServerName: "localhost", LocalDecisions: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The client reads it from its decision table's node state.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		share, ok := cl.BackgroundReserve()
		if ok && cl.LocalStats().Tables > 0 && policy.ReserveWorkers(share, 64) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client keeps %v (%v, tables %d): want a share that holds no worker", share, ok, cl.LocalStats().Tables)
		}
	}
	resp, err := cl.DecideRemote(context.Background(), []*wire.Task{{Id: 1, Class: "api", SlaMs: 20, CostMs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if level := resp.GetDecisions()[0].GetPriority(); level < 1 {
		t.Fatalf("a 2 ms task of 20 ms SLA on a calm node decided at %d, want the foreground", level)
	}
	// The quarter, or the half if the node's own load (a test binary
	// beside it) has pushed the run queue over the line meanwhile.
	waitForReserveAtLeast(t, a, policy.CalmReserve, "after a foreground decision", 300*time.Millisecond)
}

// waitForReserveAtLeast waits up to within for the agent's node state to
// carry a reserve of at least least.
func waitForReserveAtLeast(t *testing.T, a *agent.Agent, least float32, what string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for a.State().GetBackgroundReserve() < least {
		if time.Now().After(deadline) {
			t.Fatalf("%s: reserve %v, want at least %v", what, a.State().GetBackgroundReserve(), least)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
