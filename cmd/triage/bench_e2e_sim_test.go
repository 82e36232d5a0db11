package main

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/bench/e2e"
	"github.com/triage-agent/triage/train"
)

// slowerDisk is cal with every contended write taking twice as long.
func slowerDisk(cal *train.Calibration) *train.Calibration {
	out := *cal
	out.IO = append([]train.IOLevel(nil), cal.IO...)
	for i := 1; i < len(out.IO); i++ {
		out.IO[i].WriteMs *= 2
		out.IO[i].Slowdown *= 2
	}
	return &out
}

// The simulated column runs the bench's own policies (the agent's row as
// eval's guarded dqn, through ONNX Runtime) on each node, and is what
// `triage eval` gives for the same scenario and seed.
func TestSimulatedColumnIsEvalOnEachNode(t *testing.T) {
	sc, err := train.LoadScenario(filepath.Join("..", "..", "testdata", "scenarios", "intf-io-backup.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep := &e2e.Report{Evaluation: &train.Evaluation{Order: []string{"fifo", "reserve-rule", "agent"},
		Policies: map[string]train.Metrics{"fifo": {SLAAttainment: 0.5}, "reserve-rule": {SLAAttainment: 0.75}, "agent": {SLAAttainment: 0.8}}}}
	committed := train.DefaultCalibration()
	sims, err := simulateBench(sc, 0, "", rep, []simNode{{"committed", committed}, {"slow", slowerDisk(committed)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sims) != 2 || sims[0].Node != "committed" || sims[1].Node != "slow" {
		t.Fatalf("got %+v, want one entry per node in order", sims)
	}
	for _, s := range sims {
		for _, label := range rep.Evaluation.Order {
			if v, ok := s.SLAAttainment[label]; !ok || !(v > 0 && v <= 1) {
				t.Errorf("%s node: %s = %v, %v; want an SLA attainment in (0, 1]", s.Node, label, v, ok)
			}
		}
		if len(s.SLAAttainment) != 3 {
			t.Errorf("%s node: %d policies simulated, want the bench's 3", s.Node, len(s.SLAAttainment))
		}
	}
	ev, err := train.EvaluateSeedsOn(sc, []int64{0}, train.EvalNode{}, train.FIFO{}, train.ReserveRule{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"fifo", "reserve-rule"} {
		if got, want := sims[0].SLAAttainment[p], ev.Policies[p].SLAAttainment; got != want {
			t.Errorf("%s on the committed node: %v, triage eval gives %v", p, got, want)
		}
	}
	if sims[1].SLAAttainment["fifo"] >= sims[0].SLAAttainment["fifo"] {
		t.Errorf("fifo %.4f on a disk twice as slow under contention, %.4f on the committed one: want lower",
			sims[1].SLAAttainment["fifo"], sims[0].SLAAttainment["fifo"])
	}

	rep.Simulated = sims
	var b bytes.Buffer
	writeSimulatedMarkdown(&b, rep)
	out := b.String()
	for _, want := range []string{"simulated, committed node", "simulated, slow node", "| fifo | 0.5000 |", "| agent | 0.8000 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if want := fmt.Sprintf("| fifo | 0.5000 | %.4f | %+.1f |", sims[0].SLAAttainment["fifo"], 100*(0.5-sims[0].SLAAttainment["fifo"])); !strings.Contains(out, want) {
		t.Errorf("table lacks %q:\n%s", want, out)
	}
	t.Logf("\n%s", out)
}

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
	if err == nil || !strings.Contains(err.Error(), "--node-out") {
		t.Errorf("--node-out on a scenario that writes nothing: got %v, want an error naming the flag", err)
	}
}
