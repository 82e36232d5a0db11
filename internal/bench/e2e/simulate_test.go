package e2e

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
	sc, err := train.LoadScenario(filepath.Join("..", "..", "..", "testdata", "scenarios", "intf-io-backup.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Evaluation: &train.Evaluation{Order: []string{"fifo", "reserve-rule", "agent"},
		Policies: map[string]train.Metrics{"fifo": {SLAAttainment: 0.5}, "reserve-rule": {SLAAttainment: 0.75}, "agent": {SLAAttainment: 0.8}}}}
	committed := train.DefaultCalibration()
	sims, err := Simulate(sc, 0, "", rep, []SimNode{{Name: "committed", Cal: committed}, {Name: "slow", Cal: slowerDisk(committed)}})
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
	rep.WriteSimulatedMarkdown(&b)
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

	// Each node's twin of the agent carries its service times per period
	// and class: the scenario's shape, and slower I/O on the slower disk
	// for the class that writes (intf-io-backup's classes all write).
	periods, classes := len(sc.Periods()), len(sc.Classes)
	for _, s := range sims {
		if len(s.ServiceP50Ms) != periods || len(s.ServiceP50Ms[0]) != classes {
			t.Fatalf("%s node: service times %v, want %d periods × %d classes", s.Node, s.ServiceP50Ms, periods, classes)
		}
	}
	slower := 0
	for k := range sims[0].ServiceP50Ms {
		for c := range sims[0].ServiceP50Ms[k] {
			if sims[1].ServiceP50Ms[k][c] > sims[0].ServiceP50Ms[k][c] {
				slower++
			}
		}
	}
	if slower == 0 {
		t.Errorf("no class ran slower on the slower disk: %v against %v", sims[1].ServiceP50Ms, sims[0].ServiceP50Ms)
	}
}
