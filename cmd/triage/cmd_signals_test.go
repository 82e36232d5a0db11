package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/triage-agent/triage/policy"
)

func runSignalsCaptured(t *testing.T, args ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	signalsOut = &buf
	defer func() { signalsOut = os.Stdout }()
	if err := runSignals(args); err != nil {
		t.Fatalf("triage signals %v: %v", args, err)
	}
	return buf.Bytes()
}

// TestSignalsOnceJSONShape runs `triage signals --once --json` on the
// procfs path (any user can) and checks the object the issue specifies.
func TestSignalsOnceJSONShape(t *testing.T) {
	out := runSignalsCaptured(t, "--once", "--json", "--no-bpf", "--window", "300ms")
	var obj struct {
		Features map[string]float64  `json:"features"`
		Sources  map[string]string   `json:"sources"`
		Runq     map[string]*float64 `json:"runq_latency_us"`
		Probes   []map[string]any    `json:"probes"`
		Schema   string              `json:"schema"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if obj.Schema != policy.StateSchema || len(obj.Features) != policy.NumFeatures {
		t.Fatalf("schema %q, %d features", obj.Schema, len(obj.Features))
	}
	for _, n := range policy.FeatureNames {
		v, ok := obj.Features[n]
		if !ok || v < 0 || v > 1 {
			t.Errorf("feature %s = %v (present %v)", n, v, ok)
		}
	}
	for _, k := range []string{"runq", "accept", "blkio", "syscall", "tcp", "cpu"} {
		if s := obj.Sources[k]; s != "procfs" && s != "netlink" && s != "none" {
			t.Errorf("source %s = %q with --no-bpf", k, s)
		}
	}
	if _, ok := obj.Runq["p50"]; !ok {
		t.Errorf("runq_latency_us has no p50: %s", out)
	}
	if len(obj.Probes) != 5 {
		t.Errorf("%d probes listed, want 5", len(obj.Probes))
	}
}

func TestSignalsTableAndBadFlags(t *testing.T) {
	out := runSignalsCaptured(t, "--count", "1", "--no-bpf", "--window", "200ms")
	for _, want := range []string{"run queue", "PROBE", "procfs", "FEATURE (" + policy.StateSchema + ")"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Every feature has its row, in vector order, with its source: the
	// queue per worker and the backlogs are the agent's own count.
	for f, name := range policy.FeatureNames {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^ *%d %s +[0-9.]+ +[a-z]+`, f, name)).Match(out) {
			t.Errorf("table lacks the row of feature %d %s:\n%s", f, name, out)
		}
	}
	for _, f := range []int{policy.FeatQueue, policy.FeatBacklogTop, policy.FeatBacklogFore, policy.FeatBacklogAll} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^ *%d %s +[0-9.]+ +agent`, f, policy.FeatureNames[f])).Match(out) {
			t.Errorf("feature %s not fed by the agent:\n%s", policy.FeatureNames[f], out)
		}
	}
	for _, bad := range [][]string{{"--tier", "fentry"}, {"--watch-pid", "x"}, {"--watch-port", "70000"}, {"--window", "0s"}} {
		if err := runSignals(append(bad, "--no-bpf")); err == nil {
			t.Errorf("triage signals %v accepted", bad)
		}
	}
}
