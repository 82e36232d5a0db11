package client

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// An agent that publishes no tables (an older agent, or the bench's plain
// backend) refuses the table subscription; a client with local decisions
// on then sends every task to it, over a real QUIC connection, and says so.
func TestAgentWithoutTables(t *testing.T) {
	d := policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := serve.New(serve.Config{Addr: "127.0.0.1:0", DisableTCP: true, Logger: quiet}, backend.NewPolicy(d, nil))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	ctx := context.Background()
	cl, err := Dial(ctx, srv.Addr().String(), Config{PinSHA256: srv.Fingerprint(), ServerName: "localhost", LocalDecisions: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !cl.LocalStats().Unsupported {
		if time.Now().After(deadline) {
			t.Fatal("the refused subscription was not noticed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range 10 {
		task := &wire.Task{Id: uint64(i + 1), Class: "scoring", SlaMs: 200, CostMs: 15}
		if _, ok := cl.DecideLocal(task); ok {
			t.Fatal("decided locally without a table")
		}
		resp, err := cl.Decide(ctx, []*wire.Task{task})
		if err != nil || len(resp.GetDecisions()) != 1 || resp.GetDecisions()[0].GetPriority() > 4 || len(resp.GetDecisions()[0].GetQ()) != policy.NumActions {
			t.Fatalf("task %d: %v %v", i, resp, err)
		}
	}
	if n, err := cl.ReportOutcomes(ctx, []*wire.Outcome{{Id: 1, LatencyMs: 3, SlaMet: true}}); err != nil || n != 1 {
		t.Fatalf("outcomes: %d %v", n, err)
	}
	st := cl.LocalStats()
	if st.Local != 0 || st.Remote != 10 || st.Tables != 0 || st.Reported != 0 {
		t.Fatalf("stats %+v", st)
	}
}
