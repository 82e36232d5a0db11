package main

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/triage-agent/triage/internal/bench/e2e"
)

// A node this machine cannot give is refused before the disk is measured
// (30 s), and --node-out without a measurement is an error, not an empty
// file.
func TestBenchE2ERefusesBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	big := writeScenario(t, t.TempDir(), `{"name":"big","seed":3,"duration_s":5,"workers":2,"node":{"cpus":4096},
	 "arrival":{"process":"poisson","rate_per_s":50},
	 "classes":[{"name":"a","share":1,"sla_ms":30,"io_share":0.5,"cost_ms":{"dist":"exponential","mean":3}}]}`)
	if err := runBenchE2E([]string{"--scenario", big}); !errors.Is(err, e2e.ErrTooManyCPUs) {
		t.Errorf("node.cpus 4096: got %v, want ErrTooManyCPUs", err)
	}
	small := writeOneClassScenario(t, dir, "small.json", 5)
	err := runBenchE2E([]string{"--scenario", small, "--node-out", filepath.Join(dir, "node.json")})
	if !errors.Is(err, e2e.ErrNothingMeasured) {
		t.Errorf("--node-out on a scenario that writes nothing: got %v, want an error naming the flag", err)
	}
}
