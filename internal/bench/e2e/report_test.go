package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/triage-agent/triage/train"
)

// The report prints every run's row, the agent's levels per class, and
// the decision counts the runs made, from the runs' own outcomes: a report
// of other runs prints other figures.
func TestWriteReportPrintsTheRuns(t *testing.T) {
	sc, err := train.ParseScenario([]byte(`{"name":"report","seed":3,"duration_s":2,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":40},
	 "classes":[{"name":"fast","share":0.5,"sla_ms":20,"cost_ms":{"dist":"exponential","mean":2}},
	            {"name":"slow","share":0.5,"sla_ms":900,"cost_ms":{"dist":"exponential","mean":50}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tasks := sc.Arrivals(3)
	run := func(label string, met func(i int) bool, level func(c int) int) *Result {
		outs := make([]train.Outcome, len(tasks))
		for i := range tasks {
			outs[i] = train.Outcome{Task: tasks[i], Level: level(tasks[i].Class), Finished: true, Met: met(i)}
			outs[i].FinishMs = outs[i].ArrivalMs + 1
		}
		return &Result{Label: label, Outcomes: outs, Metrics: train.Summarise(sc, outs), TimeScale: 0.5}
	}
	fifo := run("fifo", func(i int) bool { return i%2 == 0 }, func(int) int { return 0 })
	agent := run("agent", func(int) bool { return true }, func(c int) int { return 4 * (1 - c) })
	rep := &Report{FIFO: fifo, Agent: agent, Stats: AgentStats{Decide: DecideLocal, LocalDecisions: len(tasks) - 3, RemoteDecisions: 3}}
	rep.Evaluation = &train.Evaluation{Scenario: sc.Name, Order: []string{"fifo", "agent"}, Policies: map[string]train.Metrics{"fifo": fifo.Metrics, "agent": agent.Metrics}}
	var b bytes.Buffer
	if err := rep.WriteReport(&b, sc, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	nFast := 0
	for _, x := range tasks {
		if x.Class == 0 {
			nFast++
		}
	}
	for _, want := range []string{
		"| agent | 1.0000 |",
		fmt.Sprintf("| fast | %d | 1.0000 | 0 / 0 / 0 / 0 / %d |", nFast, nFast),
		fmt.Sprintf("| slow | %d | 1.0000 | %d / 0 / 0 / 0 / 0 |", len(tasks)-nFast, len(tasks)-nFast),
		"(no simulated column: the run's clock is ×0.500",
		fmt.Sprintf("decisions (--decide local): %d local, from the agent's table; 3 remote", len(tasks)-3),
		fmt.Sprintf("SLA attainment 1.0000 vs %.4f\n", fifo.Metrics.SLAAttainment),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// --node-out without a disk measured is refused before anything runs.
func TestSimNodesRefusesNodeOutWithoutAMeasurement(t *testing.T) {
	sc, err := train.ParseScenario([]byte(`{"name":"cpu","seed":3,"duration_s":1,"workers":1,
	 "arrival":{"process":"poisson","rate_per_s":10},
	 "classes":[{"name":"a","share":1,"sla_ms":30,"cost_ms":{"dist":"exponential","mean":3}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := SimNodes(context.Background(), &bytes.Buffer{}, sc, t.TempDir(), true, "node.json"); !errors.Is(err, ErrNothingMeasured) {
		t.Fatalf("got %v, want ErrNothingMeasured", err)
	}
	nodes, unit, err := SimNodes(context.Background(), &bytes.Buffer{}, sc, t.TempDir(), true, "")
	if err != nil || len(nodes) != 1 || nodes[0].Name != "committed" || unit != 0 {
		t.Fatalf("a scenario that writes nothing: nodes %v, unit %v, err %v; want the committed node alone", nodes, unit, err)
	}
}

// The held-back starts are counted by the period their tasks arrived in
// (train.Outcome.HeldBack through Metrics.PerPeriod), and the report
// prints each period's count out of its tasks, for the real run and each
// simulated node; a scenario of one period prints no such line.
func TestHeldBackStartsByPeriod(t *testing.T) {
	sc, err := train.ParseScenario([]byte(`{"name":"held","seed":5,"duration_s":4,"workers":2,
	 "node":{"cpus":2},
	 "arrival":{"process":"poisson","rate_per_s":50},
	 "interference":[{"kind":"cpu","at_s":1,"for_s":2,"threads":2}],
	 "classes":[{"name":"c","share":1,"sla_ms":50,"cost_ms":{"dist":"exponential","mean":2}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tasks := sc.Arrivals(5)
	outs := make([]train.Outcome, len(tasks))
	want := make([]int, 3) // quiet, cpu 2 threads, quiet
	perPeriod := make([]int, 3)
	for i := range tasks {
		k := 0
		switch s := tasks[i].ArrivalMs / 1000; {
		case s >= 3:
			k = 2
		case s >= 1:
			k = 1
		}
		perPeriod[k]++
		held := k == 1 || i%5 == 0 // the episode's tasks, and every fifth
		outs[i] = train.Outcome{Task: tasks[i], Finished: true, Met: true, HeldBack: held}
		if held {
			want[k]++
		}
	}
	if want[1] != perPeriod[1] || want[0] == 0 || want[0] == perPeriod[0] {
		t.Fatalf("the test's draw does not separate the periods: %v of %v", want, perPeriod)
	}
	m := train.Summarise(sc, outs)
	got := heldPerPeriod(m.PerPeriod)
	if !slices.Equal(got, want) {
		t.Fatalf("held back per period %v, want %v", got, want)
	}
	sim := []int{want[2], want[0], want[1]} // any other counts
	ev := &train.Evaluation{Periods: sc.Periods(), Policies: map[string]train.Metrics{"agent": m}}
	out := heldByPeriod(ev, got, []Simulated{{Node: "committed", HeldBackStartsPerPeriod: sim}})
	for k, p := range ev.Periods {
		for _, s := range []string{
			fmt.Sprintf("%s: %d of %d", p.Label(), want[k], perPeriod[k]),
			fmt.Sprintf("%s: %d of %d", p.Label(), sim[k], perPeriod[k]),
		} {
			if !strings.Contains(out, s) {
				t.Errorf("report lacks %q:\n%s", s, out)
			}
		}
	}
	if !strings.Contains(out, "by arrival), real:") || !strings.Contains(out, "by arrival), simulated, committed node:") {
		t.Errorf("report does not name the real run and the simulated node:\n%s", out)
	}
	one, err := train.ParseScenario([]byte(`{"name":"one","seed":5,"duration_s":1,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":50},
	 "classes":[{"name":"c","share":1,"sla_ms":50,"cost_ms":{"dist":"exponential","mean":2}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := heldPerPeriod(train.Summarise(one, outs[:1]).PerPeriod); got != nil {
		t.Errorf("one period: %v, want nil", got)
	}
	if s := heldByPeriod(&train.Evaluation{Periods: one.Periods()}, nil, nil); s != "" {
		t.Errorf("one period printed %q", s)
	}
}

// The twins' counts go beside the real run's, node by node, the count
// asked for; without a twin nothing is added.
func TestSimulatedCountNamesEachNode(t *testing.T) {
	short := func(s *Simulated) int { return s.ShortStarts }
	if got := simulatedCount(nil, short); got != "" {
		t.Fatalf("no twin: %q, want nothing", got)
	}
	sims := []Simulated{{Node: "committed", ShortStarts: 412, ExpiredStarts: 7}, {Node: "this", ShortStarts: 0, ExpiredStarts: 641}}
	if got, want := simulatedCount(sims, short), " (simulated: committed node 412, this node 0)"; got != want {
		t.Fatalf("short starts: got %q, want %q", got, want)
	}
	if got, want := simulatedCount(sims, func(s *Simulated) int { return s.ExpiredStarts }), " (simulated: committed node 7, this node 641)"; got != want {
		t.Fatalf("expired starts: got %q, want %q", got, want)
	}
}
