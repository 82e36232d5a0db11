package train

import (
	"math"
	"strconv"
	"testing"

	"github.com/triage-agent/triage/policy"
)

func tinyScenario(t testing.TB, rate float64) *Scenario {
	t.Helper()
	sc := mustParseScenario(t, `{"name":"tiny","seed":11,"duration_s":20,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":`+ftoa(rate)+`},
	 "classes":[{"name":"short","share":0.7,"sla_ms":15,"cost_ms":{"dist":"lognormal","median":2,"p99":6}},
	            {"name":"long","share":0.3,"sla_ms":1000,"cost_ms":{"dist":"lognormal","median":40,"p99":150}}]}`)
	return sc
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func TestSimInvariants(t *testing.T) {
	sc := tinyScenario(t, 80) // about 1.2 load: some tasks must miss
	for _, p := range Baselines(sc) {
		out, err := Run(sc, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == 0 {
			t.Fatal("no tasks")
		}
		finished, missed := 0, 0
		for i := range out {
			o := &out[i]
			if o.ID != i {
				t.Fatalf("%s: outcome %d has id %d", p.Name(), i, o.ID)
			}
			if o.Finished {
				finished++
				if o.StartMs < o.ArrivalMs || math.Abs(o.FinishMs-o.StartMs-o.CostMs) > 1e-9 {
					t.Fatalf("%s: task %d starts %v finishes %v arrives %v cost %v", p.Name(), i, o.StartMs, o.FinishMs, o.ArrivalMs, o.CostMs)
				}
				if o.Met != (o.FinishMs <= o.DeadlineMs()) {
					t.Fatalf("%s: task %d Met=%v with latency %v and SLA %v", p.Name(), i, o.Met, o.LatencyMs(), o.SLAMs)
				}
			} else {
				missed++
				if o.Met {
					t.Fatalf("%s: unfinished task %d counted as met", p.Name(), i)
				}
			}
			for k, v := range o.State {
				if math.IsNaN(float64(v)) || v < 0 || v > 1 {
					t.Fatalf("%s: task %d feature %d = %v", p.Name(), i, k, v)
				}
			}
		}
		if finished+missed != len(out) {
			t.Fatalf("%s: %d finished + %d unfinished != %d tasks", p.Name(), finished, missed, len(out))
		}
		// Never more than `workers` tasks in service at once.
		checkConcurrency(t, p.Name(), out, sc.Workers)
	}
}

func checkConcurrency(t *testing.T, name string, out []Outcome, workers int) {
	if busy := mostAtOnce(out, func(*Outcome) bool { return true }); busy > workers {
		t.Fatalf("%s: %d tasks in service with %d workers", name, busy, workers)
	}
}

func TestFIFOServesInArrivalOrder(t *testing.T) {
	sc := tinyScenario(t, 80)
	out, err := Run(sc, FIFO{}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	last := -1.0
	for i := range out {
		if !out[i].Finished {
			continue
		}
		if out[i].StartMs < last {
			t.Fatalf("task %d started at %v before its predecessor's %v", i, out[i].StartMs, last)
		}
		last = out[i].StartMs
	}
}

// levelByClass gives the long class 4 and the short one 0: the reverse of
// what is good, so the test sees the executor obey rather than agree.
type levelByClass struct{}

func (levelByClass) Name() string { return "reverse" }
func (levelByClass) Assign(t *Task, _ *NodeView) (int, float64, error) {
	if t.Class == 1 {
		return 4, t.DeadlineMs(), nil
	}
	return 0, t.DeadlineMs(), nil
}

func TestPrioritiesRespected(t *testing.T) {
	sc := tinyScenario(t, 80)
	out, err := Run(sc, levelByClass{}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Whenever a level-0 task starts, no level-4 task that can still meet
	// its deadline may be waiting (arrived before that start and started
	// after it).
	for i := range out {
		lo := &out[i]
		if !lo.Finished || lo.Level != 0 {
			continue
		}
		for j := range out {
			hi := &out[j]
			if hi.Level != 4 || hi.ArrivalMs >= lo.StartMs {
				continue
			}
			waiting := !hi.Finished || hi.StartMs > lo.StartMs
			feasible := lo.StartMs+hi.ExpectedMs <= hi.DeadlineMs()
			if waiting && feasible {
				t.Fatalf("level-0 task %d started at %.2f while feasible level-4 task %d waited", lo.ID, lo.StartMs, hi.ID)
			}
		}
	}
	short := Summarise(sc, out).PerClass["short"]
	good, _ := Run(sc, NewStaticClass(sc), SimConfig{})
	if g := Summarise(sc, good).PerClass["short"]; g <= short {
		t.Fatalf("serving the short class first did not help it: %.3f vs %.3f", g, short)
	}
}

func TestBadActionIsAnError(t *testing.T) {
	sc := tinyScenario(t, 10)
	_, err := Run(sc, constLevel(7), SimConfig{})
	if err == nil {
		t.Fatal("level 7 accepted")
	}
}

type constLevel int

func (c constLevel) Name() string { return "const" }
func (c constLevel) Assign(t *Task, _ *NodeView) (int, float64, error) {
	return int(c), t.DeadlineMs(), nil
}

func TestSignalsRiseWithLoad(t *testing.T) {
	mean := func(rate float64, feat int) float64 {
		out, err := Run(tinyScenario(t, rate), FIFO{}, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i := range out {
			s += float64(out[i].State[feat])
		}
		return s / float64(len(out))
	}
	// Not the run-queue features: on a v1 node the workers are the CPUs,
	// at most one runnable thread per CPU, where the calibrated run queue
	// is flat (docs/calibration.md); they rise with neighbours, which
	// TestContentionSlowsTasksAndShowsInTheSignals checks.
	for _, feat := range []int{policy.FeatQueue, policy.FeatAcceptQueue, policy.FeatCPUUtil} {
		lo, hi := mean(15, feat), mean(70, feat)
		if hi <= lo {
			t.Errorf("feature %s: %.4f at low load, %.4f at high load; want it to rise", policy.FeatureNames[feat], lo, hi)
		}
	}
}

// A run whose node lacks every kernel-signal source shows their neutral
// values, as the agent does there; a run with MissingSources 0 is the
// plain run, bit for bit.
func TestMissingSourcesAreNeutral(t *testing.T) {
	sc := tinyScenario(t, 70)
	plain, err := Run(sc, FIFO{}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Run(sc, FIFO{}, SimConfig{MissingSources: 0})
	none, _ := Run(sc, FIFO{}, SimConfig{MissingSources: 1})
	for i := range plain {
		if plain[i].State != again[i].State {
			t.Fatalf("task %d: MissingSources 0 changed the state", i)
		}
		for _, f := range policy.KernelFeatures {
			if none[i].State[f] != policy.Neutral[f] {
				t.Fatalf("task %d: feature %s is %v with every source missing, want neutral %v", i, policy.FeatureNames[f], none[i].State[f], policy.Neutral[f])
			}
		}
		// Task features do not come from kernel sources.
		if none[i].State[policy.FeatQueue] != plain[i].State[policy.FeatQueue] || none[i].State[policy.FeatCost] != plain[i].State[policy.FeatCost] {
			t.Fatalf("task %d: queue or cost feature changed with the sources", i)
		}
	}
	// Some, not all, sources go missing at 0.5 over a few runs.
	seen := map[bool]bool{}
	for seed := int64(1); seed <= 8; seed++ {
		out, _ := Run(sc, FIFO{}, SimConfig{Seed: seed, MissingSources: 0.5})
		present := false
		for i := range out {
			present = present || out[i].State[policy.FeatAcceptQueue] != policy.Neutral[policy.FeatAcceptQueue]
		}
		seen[present] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("accept-queue source present in all or none of 8 runs at probability 0.5: %v", seen)
	}
}
