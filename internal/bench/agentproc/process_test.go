package agentproc

import (
	"context"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/faulttest"
	"github.com/triage-agent/triage/internal/testenv"
)

// A real `triage agent` child (built here): Start returns once it serves
// and is ready, with the addresses of its serving line; /metrics scrapes;
// Stop ends it cleanly. An agent that refuses its flags fails Start with
// its exit, not a timeout; Env reaches it.
func TestStartScrapeStop(t *testing.T) {
	faulttest.Long(t, "building and starting triage agent")
	bin := testenv.BuildTriage(t)
	ctx := context.Background()

	_, err := Start(ctx, Config{Bin: bin, Dir: t.TempDir(), NoEBPF: true, ExtraArgs: []string{"--no-such-flag"}})
	if err == nil || !strings.Contains(err.Error(), "exited before serving") {
		t.Fatalf("an agent refusing its flags: %v", err)
	}

	// The probes are the agent's own tests' concern; this one is the child.
	// Env reaches the child: a flag's variable sets it, and one no flag
	// reads (a binary older than the flag) is ignored.
	p, err := Start(ctx, Config{Bin: bin, Dir: t.TempDir(), NoEBPF: true, Env: []string{"TRIAGE_WORKERS=3", "TRIAGE_NO_SUCH_FLAG=1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if !strings.HasPrefix(p.QUICAddr, "127.0.0.1:") || !strings.HasPrefix(p.AdminAddr, "127.0.0.1:") || len(p.Fingerprint) != 64 {
		t.Fatalf("addresses quic=%q admin=%q fingerprint=%q", p.QUICAddr, p.AdminAddr, p.Fingerprint)
	}
	if !p.Alive() || p.Err() == nil {
		t.Fatalf("a running agent: alive %v, err %v", p.Alive(), p.Err())
	}
	if u, err := p.Usage(); err != nil || u.RSS <= 0 {
		t.Fatalf("usage %+v: %v", u, err)
	}
	m := p.Scrape()
	if m["go_goroutines"] <= 0 || m.SumPrefix("triage_build_info{") != 1 {
		t.Fatalf("scrape: goroutines %v, build info %v", m["go_goroutines"], m.SumPrefix("triage_build_info{"))
	}
	if got := m["triage_queue_capacity"]; got != 3 {
		t.Fatalf("TRIAGE_WORKERS=3 in Env: triage_queue_capacity %v, want 3", got)
	}
	p.Stop()
	p.Stop() // a second Stop returns at once
	if p.Alive() {
		t.Fatal("alive after Stop")
	}
	if err := p.Err(); err != nil {
		t.Fatalf("SIGTERM is a clean stop: %v", err)
	}
}
