package train

import (
	"fmt"
	"strings"
	"testing"

	"github.com/triage-agent/triage/policy"
)

func TestPeriodsCutAtEveryEpisodeBoundary(t *testing.T) {
	sc := &Scenario{DurationS: 120, Interference: []Episode{
		{Kind: InterferenceCPU, AtS: 25, ForS: 30, Threads: 2},
		{Kind: InterferenceIO, AtS: 40, ForS: 100, Writers: 4}, // overlaps, runs past the end
	}}
	got := sc.Periods()
	want := []Period{{0, 25, 0, 0}, {25, 40, 2, 0}, {40, 55, 2, 4}, {55, 120, 0, 4}}
	if len(got) != len(want) {
		t.Fatalf("periods %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("period %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if l := got[2].Label(); l != "40–55 s, cpu 2 threads + io 4 writers" {
		t.Errorf("label %q", l)
	}
	if l := got[0].Label(); l != "0–25 s, quiet" {
		t.Errorf("label %q", l)
	}
	if n := len((&Scenario{DurationS: 10}).Periods()); n != 1 {
		t.Errorf("a scenario without interference has %d periods, want 1", n)
	}
}

func TestSummariseCountsTasksPerPeriod(t *testing.T) {
	sc := &Scenario{DurationS: 10, Classes: []Class{{Name: "a"}}, Interference: []Episode{{Kind: InterferenceCPU, AtS: 5, ForS: 2, Threads: 1}}}
	out := []Outcome{
		{Task: Task{ArrivalMs: 1000}, Met: true, HeldBack: true},
		{Task: Task{ArrivalMs: 4999}, Met: false},
		{Task: Task{ArrivalMs: 5000}, Met: true, HeldBack: true},
		{Task: Task{ArrivalMs: 9000}, Met: true, HeldBack: true},
		{Task: Task{ArrivalMs: 12000}, Met: false, HeldBack: true}, // past the end: the last period
	}
	m := Summarise(sc, out)
	want := []PeriodCount{{Tasks: 2, Met: 1, Held: 1}, {Tasks: 1, Met: 1, Held: 1}, {Tasks: 2, Met: 1, Held: 2}}
	if len(m.PerPeriod) != len(want) {
		t.Fatalf("per period %+v, want %+v", m.PerPeriod, want)
	}
	for i := range want {
		if m.PerPeriod[i] != want[i] {
			t.Errorf("period %d: %+v, want %+v", i, m.PerPeriod[i], want[i])
		}
	}
	if Summarise(&Scenario{DurationS: 10, Classes: sc.Classes}, out).PerPeriod != nil {
		t.Error("a scenario without interference has per-period counts")
	}
}

func TestEvaluateSeedsPoolsPeriods(t *testing.T) {
	sc, err := LoadScenario("../testdata/scenarios/intf-tenants.json")
	if err != nil {
		t.Fatal(err)
	}
	one, err := Evaluate(sc, 0, FIFO{})
	if err != nil {
		t.Fatal(err)
	}
	two, err := EvaluateSeeds(sc, []int64{0, 1000}, FIFO{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := one.Policies["fifo"].PerPeriod, two.Policies["fifo"].PerPeriod
	if len(a) != len(sc.Periods()) || len(b) != len(a) {
		t.Fatalf("periods: %d and %d, want %d", len(a), len(b), len(sc.Periods()))
	}
	tasks := 0
	for k := range b {
		if b[k].Tasks <= a[k].Tasks || b[k].Met > b[k].Tasks {
			t.Errorf("period %d: two seeds pooled %+v, one seed %+v", k, b[k], a[k])
		}
		tasks += b[k].Tasks
	}
	if tasks != two.Policies["fifo"].Tasks {
		t.Errorf("periods hold %d tasks, the run %d", tasks, two.Policies["fifo"].Tasks)
	}
	var sb strings.Builder
	if err := two.WritePeriodMarkdown(&sb); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(sb.String(), "\n| "); rows != len(b)+2 { // the header, its rule, a row per period
		t.Errorf("table has %d rows, want %d:\n%s", rows, len(b)+2, sb.String())
	}
	if !strings.Contains(sb.String(), "cpu 2 threads + io 6 writers") {
		t.Errorf("no overlapping period in\n%s", sb.String())
	}
	// The held-back starts pool as the tasks do: a policy that always asks
	// for the contended reserve has each seed's held starts summed.
	asking := backgroundAsking{policy.ContendedReserve}
	pooled, err := EvaluateSeeds(sc, []int64{0, 1000}, asking)
	if err != nil {
		t.Fatal(err)
	}
	var seeds [2][]PeriodCount
	for i, seed := range []int64{0, 1000} {
		ev, err := Evaluate(sc, seed, asking)
		if err != nil {
			t.Fatal(err)
		}
		seeds[i] = ev.Policies[asking.Name()].PerPeriod
	}
	for k, c := range pooled.Policies[asking.Name()].PerPeriod {
		if c.Held != seeds[0][k].Held+seeds[1][k].Held || c.Held == 0 || c.Held > c.Tasks {
			t.Errorf("period %d: pooled %+v, seeds %+v and %+v", k, c, seeds[0][k], seeds[1][k])
		}
	}
	// The period table says it: a row per period for the policy that held,
	// none for FIFO, which never asks.
	sb.Reset()
	if err := pooled.WritePeriodMarkdown(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	heldTable := out[strings.Index(out, "Starts with more than the calm quarter"):]
	first := pooled.Policies[asking.Name()].PerPeriod[0]
	if !strings.Contains(heldTable, "| "+asking.Name()+" |") || strings.Count(heldTable, "\n| ") != len(b)+2 ||
		!strings.Contains(heldTable, fmt.Sprintf(" %d of %d (", first.Held, first.Tasks)) {
		t.Errorf("held-back table:\n%s", heldTable)
	}
	sb.Reset()
	if err := two.WritePeriodMarkdown(&sb); err != nil || strings.Contains(sb.String(), "Starts with more than") {
		t.Errorf("FIFO holds nothing back, yet: %v\n%s", err, sb.String())
	}
}
