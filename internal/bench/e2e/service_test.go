package e2e

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/triage-agent/triage/train"
)

// serviceP50 takes each period's and class's median service time over the
// tasks that finished, by the period they arrived in.
func TestServiceP50IsPerPeriodAndClass(t *testing.T) {
	sc := &train.Scenario{Name: "s", DurationS: 20, Workers: 2, Node: &train.Node{CPUs: 2},
		Classes:      []train.Class{{Name: "a", Share: 0.5, SLAMs: 10}, {Name: "b", Share: 0.5, SLAMs: 100}},
		Interference: []train.Episode{{Kind: train.InterferenceCPU, AtS: 10, ForS: 10, Threads: 1}}}
	task := func(class int, arrive, start, finish float64, done bool) train.Outcome {
		return train.Outcome{Task: train.Task{Class: class, ArrivalMs: arrive}, StartMs: start, FinishMs: finish, Started: true, Finished: done}
	}
	outs := []train.Outcome{
		task(0, 1000, 1000, 1002, true), task(0, 2000, 2001, 2005, true), task(0, 3000, 3000, 3003, true),
		task(1, 4000, 4000, 4100, false),  // unfinished: not counted
		task(0, 9999, 10005, 10010, true), // arrived in the quiet period, served after it: counted there
		task(1, 12000, 12000, 12050, true),
	}
	got := serviceP50(sc, outs)
	// Class a's quiet tasks took 2, 4, 3 and 5 ms: the median of an even
	// count is its lower middle, 3. Class b finished one task, after the
	// quiet period.
	want := [][]float64{{3, 0}, {0, 50}}
	if len(got) != 2 || got[0][0] != want[0][0] || got[0][1] != 0 || got[1][0] != 0 || got[1][1] != 50 {
		t.Errorf("service p50 %v, want %v", got, want)
	}
	if serviceP50(&train.Scenario{}, outs) != nil {
		t.Error("a scenario without classes gives a table")
	}
}

// The comparison prints a row per period and class that finished tasks
// on the real run, the twin's beside it, and the mean log error; nothing
// without a twin of the same shape.
func TestServiceComparisonTable(t *testing.T) {
	sc := &train.Scenario{Name: "s", DurationS: 20, Workers: 2, Node: &train.Node{CPUs: 2},
		Classes:      []train.Class{{Name: "a", Share: 0.5, SLAMs: 10}, {Name: "b", Share: 0.5, SLAMs: 100}},
		Interference: []train.Episode{{Kind: train.InterferenceCPU, AtS: 10, ForS: 10, Threads: 1}}}
	real := [][]float64{{2, 20}, {3, 0}}
	sim := Simulated{Node: "committed", ServiceP50Ms: [][]float64{{2, 40}, {6, 30}}}
	var b bytes.Buffer
	writeServiceComparison(&b, sc, real, []Simulated{sim})
	out := b.String()
	for _, want := range []string{"| 0–10 s, quiet | a | 2.0 | 2.0 | 1.00 |", "| 0–10 s, quiet | b | 20.0 | 40.0 | 2.00 |", "| 10–20 s, cpu 1 threads | a | 3.0 | 6.0 | 2.00 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| b | 0.0 |") {
		t.Errorf("a cell with no real task is printed:\n%s", out)
	}
	if e := serviceError(real, sim.ServiceP50Ms); math.Abs(e-2*math.Log(2)/3) > 1e-12 || !strings.Contains(out, "0.462") {
		t.Errorf("mean log error %v, want %v, printed in:\n%s", e, 2*math.Log(2)/3, out)
	}
	b.Reset()
	writeServiceComparison(&b, sc, real, []Simulated{{Node: "x", ServiceP50Ms: [][]float64{{1}}}})
	if b.Len() != 0 {
		t.Errorf("a twin of another shape printed:\n%s", b.String())
	}
}
