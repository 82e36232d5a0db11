package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
)

// The agent run deciding locally: a real agent in this process (its
// embedded model and guard, procfs signals), a client with local decisions
// over real QUIC. Most tasks are decided from the table in the
// dispatcher, the first of each class by a call; every task is placed
// and the agent hears of every local decision.
func TestRunDecidesLocally(t *testing.T) {
	sc, err := train.LoadScenario(smallScenario)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := agent.New(agent.Config{QUICAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", ExperienceDir: "-", FlamegraphDir: "-",
		NoEBPF: true, Device: policy.DeviceCPU, Workers: sc.Workers, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	cl, err := client.Dial(context.Background(), a.QUICAddr().String(), client.Config{PinSHA256: a.Fingerprint(), ServerName: "localhost", LocalDecisions: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	res, err := Run(context.Background(), Config{Scenario: sc, TimeScale: 1, Agent: cl, Local: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	n := len(sc.Arrivals(sc.Seed))
	t.Logf("%d local, %d remote decisions of %d tasks; client %+v", res.LocalDecisions, res.RemoteDecisions, n, cl.LocalStats())
	if res.LocalDecisions+res.RemoteDecisions != n || res.DecideErrors != 0 || len(res.DecideLatency) != n {
		t.Fatalf("%d local + %d remote decisions, %d errors, %d latencies for %d tasks", res.LocalDecisions, res.RemoteDecisions, res.DecideErrors, len(res.DecideLatency), n)
	}
	if res.LocalDecisions < n/2 || res.RemoteDecisions < 1 {
		t.Fatalf("%d of %d tasks decided locally", res.LocalDecisions, n)
	}
	if st := cl.LocalStats(); st.Reported != int64(res.LocalDecisions) || st.ReportErrors != 0 {
		t.Fatalf("client reported %d of %d local decisions (%d errors)", st.Reported, res.LocalDecisions, st.ReportErrors)
	}
}

// The JSON line keeps its "agent" object and adds the decide mode's counts.
func TestReportJSONCountsLocalAndRemote(t *testing.T) {
	r := &Report{
		FIFO: &Result{}, Agent: &Result{},
		Evaluation: &train.Evaluation{Scenario: "s", Order: []string{"fifo", "agent"}, Policies: map[string]train.Metrics{"fifo": {}, "agent": {}}},
		Stats:      AgentStats{Decide: DecideLocal, LocalDecisions: 95, RemoteDecisions: 5},
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Agent map[string]any `json:"agent"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Agent["local_decisions"] != 95.0 || obj.Agent["remote_decisions"] != 5.0 || obj.Agent["decide"] != "local" {
		t.Fatalf("agent object %v", obj.Agent)
	}
	if _, err := Bench(context.Background(), BenchConfig{Scenario: &train.Scenario{}, Decide: "sometimes"}); !errors.Is(err, ErrDecideMode) {
		t.Fatalf("--decide sometimes: %v", err)
	}
}
