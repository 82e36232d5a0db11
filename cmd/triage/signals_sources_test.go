package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/policy"
)

var featureSourceLine = regexp.MustCompile(`(?m)^triage_feature_source\{feature="([a-z0-9_]+)",source="([a-z]+)"\} 1$`)

// A running agent's /metrics and `triage signals --once --json` name the
// same source for every feature: both read state.Assembler.Features. With
// eBPF really loaded (root) and with it off.
func TestAgentMetricsAndSignalsNameTheSameSources(t *testing.T) {
	for _, tc := range []struct {
		name  string
		noBPF bool
	}{{"ebpf", false}, {"no-ebpf", true}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.noBPF {
				testenv.RequireBPF(t, "loading the agent's probes needs root; the no-ebpf case covers unprivileged runs")
			}
			a, stop := startTestAgent(t, agent.Config{NoEBPF: tc.noBPF, ExperienceDir: "-"})
			defer stop()
			resp, err := http.Get("http://" + a.AdminAddr().String() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			fromMetrics := map[string]string{}
			for _, m := range featureSourceLine.FindAllStringSubmatch(string(body), -1) {
				if prev, dup := fromMetrics[m[1]]; dup {
					t.Errorf("/metrics names two sources for %s: %s and %s", m[1], prev, m[2])
				}
				fromMetrics[m[1]] = m[2]
			}

			args := []string{"--once", "--json", "--window", "300ms"}
			if tc.noBPF {
				args = append(args, "--no-bpf")
			}
			var obj struct {
				FeatureSources map[string]string `json:"feature_sources"`
			}
			if out := runSignalsCaptured(t, args...); json.Unmarshal(bytes.TrimSpace(out), &obj) != nil {
				t.Fatalf("triage signals printed no JSON object:\n%s", out)
			}

			for _, n := range policy.FeatureNames {
				m, s := fromMetrics[n], obj.FeatureSources[n]
				if m == "" || m != s {
					t.Errorf("feature %s: /metrics says %q, triage signals says %q", n, m, s)
				}
			}
			runq := policy.FeatureNames[policy.FeatRunqP99]
			if want := map[bool]string{false: "ebpf", true: "procfs"}[tc.noBPF]; fromMetrics[runq] != want {
				t.Errorf("%s source %q, want %q", runq, fromMetrics[runq], want)
			}
		})
	}
}
