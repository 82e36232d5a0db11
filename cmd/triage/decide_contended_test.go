package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// On a node whose CPUs six spinning processes contend (this machine has
// two), `triage decide` never sends to the background (priority 0) a task
// that can still meet its SLA: a 20 ms SLA, a 2 ms cost, an empty queue, a
// class the agent has never seen. The agent is the real one as `triage
// agent` starts it: eBPF loaded, the embedded default model, the default
// guard. Each round decides a task of a new class through the CLI, then
// reports its outcome, so the next one finds the queue empty again.
func TestDecideKeepsUrgentWorkOutOfTheBackgroundOnAContendedNode(t *testing.T) {
	defer contendedNode(t, "decide-contended")()
	a, stop := startTestAgent(t, agent.Config{ExperienceDir: "-", StateInterval: 50 * time.Millisecond})
	defer stop()
	// The contention must be what the agent reads before it decides: the
	// CPUs busy and a run queue of milliseconds, from eBPF.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := a.State()
		if st.GetCpuUtil() > 0.9 && st.GetRunqP99Us() > 1000 {
			t.Logf("node: CPU %.2f, run queue p50 %.0f µs p99 %.0f µs (sources %v)", st.GetCpuUtil(), st.GetRunqP50Us(), st.GetRunqP99Us(), st.GetSources())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("six spinners on this node, but the agent reads CPU %.2f and run-queue p99 %.0f µs", st.GetCpuUtil(), st.GetRunqP99Us())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl, err := client.Dial(context.Background(), a.QUICAddr().String(), client.Config{PinSHA256: a.Fingerprint(), ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	common := []string{"--addr", a.QUICAddr().String(), "--pin-sha256", a.Fingerprint(), "--sla-ms", "20", "--cost-ms", "2", "--json"}
	for round := range 10 {
		id := uint64(round + 1)
		class := fmt.Sprintf("never-seen-%d", round)
		out, err := runWithStdio(t, "", func() error {
			return runDecide(append(common, "--id", strconv.FormatUint(id, 10), "--class", class))
		})
		if err != nil {
			t.Fatalf("round %d: triage decide: %v", round, err)
		}
		var resp wire.DecideResponseJSON
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &resp); err != nil || len(resp.Decisions) != 1 {
			t.Fatalf("round %d: triage decide printed %q: %v", round, out, err)
		}
		d := resp.Decisions[0]
		t.Logf("round %d: priority %d, Q %v (model %s)", round, d.Priority, d.Q, resp.Model)
		if d.Priority == 0 {
			t.Errorf("round %d: a 20 ms-SLA, 2 ms task on an empty queue went to the background (Q %v, model %s, node CPU %.2f, run-queue p99 %.0f µs)",
				round, d.Q, resp.Model, a.State().GetCpuUtil(), a.State().GetRunqP99Us())
		}
		if _, err := cl.ReportOutcomes(context.Background(), []*wire.Outcome{{Id: id, LatencyMs: 3, ServiceMs: 2, SlaMet: true}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the next round reads a fresh snapshot
	}
	if v := a.ModelVersion(); v == policy.BootstrapVersion {
		t.Errorf("the agent serves the bootstrap rule %q, not a trained model", v)
	}
}

// contendedNode makes this node's CPUs contended by six spinning processes
// (this machine has two) for a test of the agent's run-queue probes, which
// need root; the returned function stops them.
func contendedNode(t *testing.T, name string) (stop func()) {
	t.Helper()
	testenv.RequireBPF(t, "the agent's run-queue probes need root")
	load, err := proc.StartLoad(proc.LoadConfig{Spinners: 6, Name: name})
	if err != nil {
		t.Fatalf("starting six spinners: %v", err)
	}
	return func() { load.Close() }
}
