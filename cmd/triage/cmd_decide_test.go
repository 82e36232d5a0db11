package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/internal/bench/backend"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// runWithStdio runs f with stdin fed from in and returns what it printed.
func runWithStdio(t *testing.T, in string, f func() error) (string, error) {
	t.Helper()
	oldIn, oldOut := os.Stdin, os.Stdout
	defer func() { os.Stdin, os.Stdout = oldIn, oldOut }()
	ir, iw, _ := os.Pipe()
	or, ow, _ := os.Pipe()
	os.Stdin, os.Stdout = ir, ow
	go func() { io.WriteString(iw, in); iw.Close() }()
	done := make(chan string)
	go func() { b, _ := io.ReadAll(or); done <- string(b) }()
	err := f()
	ow.Close()
	return <-done, err
}

func TestDecideCommand(t *testing.T) {
	d := policy.NewGoDecider(policy.BootstrapMLP(), policy.BootstrapMetadata())
	s, err := serve.New(serve.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, backend.NewPolicy(d, nil))
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	defer s.Close()
	common := []string{"--addr", s.Addr().String(), "--pin-sha256", s.Fingerprint()}

	out, err := runWithStdio(t, "", func() error {
		return runDecide(append(common, "--id", "5", "--class", "interactive", "--sla-ms", "20", "--cost-ms", "2", "--json"))
	})
	if err != nil {
		t.Fatalf("triage decide --id: %v", err)
	}
	var resp wire.DecideResponseJSON
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &resp); err != nil || len(resp.Decisions) != 1 || resp.Decisions[0].ID != wire.NumericID(5) || resp.Model != d.Version() {
		t.Fatalf("--json output %q: %v", out, err)
	}

	out, err = runWithStdio(t, `{"tasks":[{"id":1,"sla_ms":10},{"id":2,"class":"batch","sla_ms":9000,"cost_ms":500}]}`, func() error {
		return runDecide(common)
	})
	if err != nil {
		t.Fatalf("triage decide < json: %v", err)
	}
	if !strings.Contains(out, "priority") || !strings.Contains(out, "batch") || !strings.Contains(out, "model "+d.Version()) {
		t.Fatalf("table output:\n%s", out)
	}

	// String ids, from the flag and from stdin, come back as given.
	out, err = runWithStdio(t, "", func() error {
		return runDecide(append(common, "--id", "order-7f3a", "--sla-ms", "20", "--json"))
	})
	if err != nil || !strings.Contains(out, `"id":"order-7f3a"`) {
		t.Fatalf("--id order-7f3a: %v\n%s", err, out)
	}
	out, err = runWithStdio(t, `{"tasks":[{"id":"a1b2c3d4-0000-4000-8000-000000000001","sla_ms":10},{"id":"007","sla_ms":10}]}`, func() error {
		return runDecide(append(common, "--json"))
	})
	if err != nil || !strings.Contains(out, `"id":"a1b2c3d4-0000-4000-8000-000000000001"`) || !strings.Contains(out, `"id":"007"`) {
		t.Fatalf("string ids on stdin: %v\n%s", err, out)
	}

	for in, why := range map[string]string{
		`{"tasks":[{"id":""}]}`:      "bad task id",
		"":                           "no tasks",
		"{tasks:1}":                  "not {\"tasks\"",
		`{"tasks":[]}`:               "empty",
		`{"tasks":[{"id":1,"x":2}]}`: "unknown field",
	} {
		_, err := runWithStdio(t, in, func() error { return runDecide(common) })
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("stdin %q: err %v, want it to say %q", in, err, why)
		}
	}
	_, err = runWithStdio(t, "", func() error {
		return runDecide([]string{"--addr", s.Addr().String(), "--pin-sha256", strings.Repeat("0", 64), "--id", "1"})
	})
	if err == nil || !strings.Contains(err.Error(), "pin") {
		t.Errorf("wrong pin: %v", err)
	}
}
