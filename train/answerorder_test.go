package train

import (
	"errors"
	"testing"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/guard"
)

// The agent answers a priority alone, so its executors order a level by
// their AnswerOrder, whoever decided the task (the network, or the guard's
// controller where the network is unsure): under ShortestFirst, on one
// worker, tasks queued together at one level with room in their SLAs start
// shortest first, not by deadline (here the longest has the earliest).
func TestShortestFirstServesALevelShortestFirst(t *testing.T) {
	sc, tasks := queuedBehindOne(t)
	meta := policy.CurrentMetadata("test", "")
	// Members choose 3 and 1: the guard's controller decides every task.
	disputed := policy.NewGoDecider(constNet([policy.NumActions]float32{3: 1}, [policy.NumActions]float32{1: 0.9}), meta)
	g, err := guard.Named("reserve-rule", guard.DefaultConfig()) // every task to level 0
	if err != nil {
		t.Fatal(err)
	}
	guarded := NewGuardedPolicy("guarded, unsure", disputed, g)
	guarded.Order = ShortestFirst
	for _, p := range []Policy{
		&DeciderPolicy{Label: "network", Decider: sureOfThree(meta), Order: ShortestFirst},
		guarded,
	} {
		out, err := RunTasks(sc, tasks, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range out {
			if out[i].Key != out[i].ExpectedMs {
				t.Errorf("%s: task %d has key %v, want its expected cost %v", p.Name(), i, out[i].Key, out[i].ExpectedMs)
			}
		}
		for i := 1; i < 4; i++ {
			if out[i].Level != out[i+1].Level {
				t.Fatalf("%s: setup: tasks %d and %d at levels %d and %d, want one level", p.Name(), i, i+1, out[i].Level, out[i+1].Level)
			}
			if !(out[i+1].StartMs < out[i].StartMs) {
				t.Errorf("%s: task %d (expected %v ms) started at %v, task %d (expected %v ms) at %v: want the shorter first",
					p.Name(), i+1, out[i+1].ExpectedMs, out[i+1].StartMs, i, out[i].ExpectedMs, out[i].StartMs)
			}
		}
	}
}

// By default (AdaptiveOrder, the zero value) the same four tasks on one
// worker do not crowd their level (crowdPerWorker per worker), so they
// start by deadline, whoever decided them.
func TestAgentAnswersAreServedByDeadlineWhileTheLevelIsNotCrowded(t *testing.T) {
	sc, tasks := queuedBehindOne(t)
	meta := policy.CurrentMetadata("test", "")
	disputed := policy.NewGoDecider(constNet([policy.NumActions]float32{3: 1}, [policy.NumActions]float32{1: 0.9}), meta)
	g, err := guard.Named("reserve-rule", guard.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Policy{
		&DeciderPolicy{Label: "network", Decider: sureOfThree(meta)},
		NewGuardedPolicy("guarded, unsure", disputed, g),
	} {
		out, err := RunTasks(sc, tasks, p, SimConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < 4; i++ {
			if !(out[i].StartMs < out[i+1].StartMs) {
				t.Errorf("%s: task %d (deadline %v) started at %v, task %d (deadline %v) at %v: want the earlier deadline first",
					p.Name(), i, out[i].DeadlineMs(), out[i].StartMs, i+1, out[i+1].DeadlineMs(), out[i+1].StartMs)
			}
		}
	}
}

// With DeadlineFirst, the order before the fifteenth session, the same
// tasks start by deadline.
func TestDeadlineFirstServesALevelByDeadline(t *testing.T) {
	sc, tasks := queuedBehindOne(t)
	sure := sureOfThree(policy.CurrentMetadata("test", ""))
	out, err := RunTasks(sc, tasks, &DeciderPolicy{Label: "network", Decider: sure, Order: DeadlineFirst}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 4; i++ {
		if out[i].Key != out[i].DeadlineMs() {
			t.Errorf("task %d has key %v, want its deadline %v", i, out[i].Key, out[i].DeadlineMs())
		}
		if !(out[i].StartMs < out[i+1].StartMs) {
			t.Errorf("task %d (deadline %v) started at %v, task %d (deadline %v) at %v: want the earlier deadline first",
				i, out[i].DeadlineMs(), out[i].StartMs, i+1, out[i+1].DeadlineMs(), out[i+1].StartMs)
		}
	}
}

// queuedBehindOne is a one-worker node and five tasks: task 0 takes the
// worker, and 1..4 queue behind it with room in their SLAs. Their expected
// costs fall as their deadlines rise, so deadline order starts 1, 2, 3, 4
// and shortest first 4, 3, 2, 1.
func queuedBehindOne(t *testing.T) (*Scenario, []Task) {
	t.Helper()
	sc := mustParseScenario(t, `{"name":"one-worker","seed":3,"duration_s":1,"workers":1,
	 "arrival":{"process":"poisson","rate_per_s":1},
	 "classes":[{"name":"c","share":1,"sla_ms":5000,"cost_ms":{"dist":"constant","value":10}}]}`)
	tasks := []Task{{ID: 0, ArrivalMs: 0, CostMs: 50, ExpectedMs: 50, SLAMs: 5000, Weight: 1}}
	for i := 1; i <= 4; i++ {
		c := float64(50 - 10*i)
		tasks = append(tasks, Task{ID: i, ArrivalMs: float64(i), CostMs: c, ExpectedMs: c, SLAMs: 1000 + 100*float64(i), Weight: 1})
	}
	return sc, tasks
}

// sureOfThree is a network that answers priority 3 for every task.
func sureOfThree(meta policy.Metadata) policy.Decider {
	return policy.NewGoDecider(constNet([policy.NumActions]float32{3: 1}), meta)
}

func TestParseAnswerOrder(t *testing.T) {
	for s, want := range map[string]AnswerOrder{"": AdaptiveOrder, "adaptive": AdaptiveOrder, "shortest": ShortestFirst, "deadline": DeadlineFirst} {
		got, err := ParseAnswerOrder(s)
		if err != nil || got != want {
			t.Errorf("ParseAnswerOrder(%q) = %v, %v; want %v", s, got, err, want)
		}
		if s != "" && got.String() != s {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), s)
		}
	}
	for _, s := range []string{"Shortest", "edf", "random"} {
		if _, err := ParseAnswerOrder(s); !errors.Is(err, ErrBadAnswerOrder) {
			t.Errorf("ParseAnswerOrder(%q): %v, want ErrBadAnswerOrder", s, err)
		}
	}
}
