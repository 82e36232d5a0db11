package train

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalJSONShape(t *testing.T) {
	sc := tinyScenario(t, 60)
	ev, err := Evaluate(sc, 0, append([]Policy{&randomPolicy{seed: 1}}, Baselines(sc)...)...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ev.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "\n") {
		t.Fatal("JSON spans lines")
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got["scenario"]) != `"tiny"` {
		t.Fatalf("top level %s, want exactly scenario and policies", b)
	}
	var pols map[string]map[string]float64
	if err := json.Unmarshal(got["policies"], &pols); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"random", "fifo", "edf", "sjf", "static-class", "slack-rule", "reserve-rule"} {
		m, ok := pols[name]
		if !ok {
			t.Fatalf("policy %s missing from %s", name, b)
		}
		if len(m) != 4 {
			t.Fatalf("%s has keys %v, want sla_attainment, goodput_per_s, p50_ms, p99_ms", name, m)
		}
		for _, k := range []string{"sla_attainment", "goodput_per_s", "p50_ms", "p99_ms"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("%s lacks %s", name, k)
			}
		}
		if m["sla_attainment"] < 0 || m["sla_attainment"] > 1 || m["p99_ms"] < m["p50_ms"] {
			t.Fatalf("%s: implausible metrics %v", name, m)
		}
	}
}

func TestSummariseCountsWeightsAndMisses(t *testing.T) {
	sc := tinyScenario(t, 10)
	w := 3.0
	sc.Classes[0].Weight = &w
	out := []Outcome{
		{Task: Task{Class: 0, Weight: 3, ArrivalMs: 0, SLAMs: 10}, Finished: true, Met: true, FinishMs: 5},
		{Task: Task{Class: 1, Weight: 1, ArrivalMs: 0, SLAMs: 10}, Finished: true, Met: false, FinishMs: 50},
		{Task: Task{Class: 1, Weight: 1, ArrivalMs: 0, SLAMs: 10}, Finished: false, FinishMs: 100},
	}
	m := Summarise(sc, out)
	if math.Abs(m.SLAAttainment-1.0/3) > 1e-12 || math.Abs(m.GoodputPerS-3/sc.DurationS) > 1e-12 {
		t.Fatalf("attainment %v goodput %v", m.SLAAttainment, m.GoodputPerS)
	}
	if m.P50Ms != 50 || m.P99Ms != 100 {
		t.Fatalf("p50 %v p99 %v, want 50 and 100 (the unfinished task counts)", m.P50Ms, m.P99Ms)
	}
}

func TestPlotsAreSelfContainedSVG(t *testing.T) {
	line := string(LinePlotSVG("t<1>", "x", "y", []Series{{Label: "a", X: []float64{0, 1, 2}, Y: []float64{0.5, math.NaN(), 0.7}}}))
	bar := string(BarPlotSVG("b", []string{"fifo", "dqn"}, []float64{0.2, 0.9}, "%.2f"))
	for _, s := range []string{line, bar} {
		if !strings.HasPrefix(s, "<svg xmlns=\"http://www.w3.org/2000/svg\"") || !strings.HasSuffix(s, "</svg>\n") {
			t.Fatalf("not an SVG document: %.80s", s)
		}
		if strings.Contains(s, "href") || strings.Contains(s, "<script") || strings.Contains(s, "NaN") {
			t.Fatalf("SVG refers outside itself or leaks NaN: %s", s)
		}
	}
	if !strings.Contains(line, "t&lt;1&gt;") {
		t.Fatal("title not escaped")
	}
}

func TestReportWritesEveryFile(t *testing.T) {
	sc := tinyScenario(t, 40)
	res := &TrainResult{Net: newMLP(rand.New(rand.NewPCG(1, 1)), []int{8}), Curve: []EpisodeStats{
		{Episode: 0, SLAAttainment: 0.5, ValScore: math.NaN()},
		{Episode: 1, SLAAttainment: 0.6, ValScore: 0.01},
	}}
	ev, err := Evaluate(sc, 0, FIFO{}, EDF{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := (&Report{Result: res, Evaluations: []*Evaluation{ev}}).Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "learning-curve.json"))
	if err != nil {
		t.Fatal(err)
	}
	var curve []map[string]any
	if err := json.Unmarshal(b, &curve); err != nil {
		t.Fatal(err)
	}
	if _, ok := curve[0]["val_score"]; ok || curve[1]["val_score"] != 0.01 {
		t.Fatalf("val_score should appear only where measured: %s", b)
	}
	for _, f := range []string{"learning-curve.svg", "evaluation.md", "evaluation.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

func TestEvaluateSeedsAverages(t *testing.T) {
	sc := tinyScenario(t, 60)
	a, _ := Evaluate(sc, 0, FIFO{})
	b, _ := Evaluate(sc, 1000, FIFO{})
	m, err := EvaluateSeeds(sc, SeedList(2), FIFO{})
	if err != nil {
		t.Fatal(err)
	}
	want := (a.Policies["fifo"].SLAAttainment + b.Policies["fifo"].SLAAttainment) / 2
	if got := m.Policies["fifo"].SLAAttainment; math.Abs(got-want) > 1e-12 || a.Policies["fifo"].SLAAttainment == b.Policies["fifo"].SLAAttainment {
		t.Fatalf("mean over seeds %v, want %v (seeds gave %v and %v)", got, want, a.Policies["fifo"].SLAAttainment, b.Policies["fifo"].SLAAttainment)
	}
}

// An evaluation on another node's calibration is the simulation of that
// node: a disk twice as slow under contention serves the I/O class worse,
// and the CPU-only class no better; the zero EvalNode is the default one.
func TestEvaluateOnAnotherNodesCalibration(t *testing.T) {
	sc := nodeScenario(t, 2)
	slow := *DefaultCalibration()
	slow.IO = append([]IOLevel(nil), slow.IO...)
	for i := range slow.IO {
		if slow.IO[i].Writers > 0 {
			slow.IO[i].Slowdown *= 2
			slow.IO[i].WriteMs *= 2
		}
	}
	here, err := EvaluateSeedsOn(sc, []int64{0}, EvalNode{}, FIFO{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := EvaluateSeeds(sc, []int64{0}, FIFO{})
	if err != nil {
		t.Fatal(err)
	}
	there, err := EvaluateSeedsOn(sc, []int64{0}, EvalNode{Calibration: &slow}, FIFO{})
	if err != nil {
		t.Fatal(err)
	}
	h, p, th := here.Policies["fifo"], plain.Policies["fifo"], there.Policies["fifo"]
	if h.SLAAttainment != p.SLAAttainment {
		t.Errorf("the zero EvalNode: %v, the default node %v", h.SLAAttainment, p.SLAAttainment)
	}
	if !(th.PerClass["io"] < h.PerClass["io"]) || th.PerClass["cpu"] > h.PerClass["cpu"] {
		t.Errorf("a disk twice as slow: io class %.3f → %.3f, cpu class %.3f → %.3f; want io worse, cpu no better",
			h.PerClass["io"], th.PerClass["io"], h.PerClass["cpu"], th.PerClass["cpu"])
	}
}
