package agent

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// The live /metrics passes Prometheus' own linter (promtool check metrics:
// names, units, _total suffixes, label sets, help text), with every family
// present: a decide and an outcome have gone through.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool not installed (Debian package prometheus)")
	}
	ta := startAgent(t, Config{NoEBPF: true})
	cl := ta.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Decide(ctx, []*wire.Task{{TaskId: "promtool-1", Class: "scoring", SlaMs: 200, CostMs: 15}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ReportOutcomes(ctx, []*wire.Outcome{{TaskId: resp.GetDecisions()[0].GetTaskId(), LatencyMs: 20, ServiceMs: 15, SlaMet: true}}); err != nil {
		t.Fatal(err)
	}
	code, body := ta.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || out.Len() != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`triage_build_info{goversion="go`,
		`onnxruntime="` + policy.RuntimeVersion() + `"`,
		`triage_endpoint_requests_total{code="ok",method="decide",protocol="native"} 1`,
		`triage_endpoint_requests_total{code="ok",method="outcomes",protocol="native"} 1`,
		`triage_endpoint_decisions_total{protocol="native"} 1`,
		`triage_tls_reload_failures_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "detail=") {
		t.Error("triage_probe_attached still carries free text (detail)")
	}
}
