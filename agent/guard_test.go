package agent

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/wire"
)

// disputedMLP is a two-member ensemble whose members choose priorities 4
// and 0 whatever the state; the mean chooses 4 with agreement 0.5.
func disputedMLP() *policy.MLP {
	l := policy.Dense{In: policy.NumFeatures, Out: 2 * policy.NumActions,
		W: make([]float32, policy.NumFeatures*2*policy.NumActions), B: make([]float32, 2*policy.NumActions)}
	l.B[4] = 1                   // member 0: priority 4
	l.B[policy.NumActions] = 0.9 // member 1: priority 0
	return &policy.MLP{Layers: []policy.Dense{l}, Members: 2}
}

func writeModelMeta(t testing.TB, m *policy.MLP, meta policy.Metadata) string {
	t.Helper()
	b, err := policy.MarshalONNX(m, meta)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// normal is a task no controller takes for urgent work: at idle every
// controller admits it at priority 2 (its SLA is 10× every default
// urgency threshold: ShedPI's priority 2).
func normal(id uint64) *wire.Task {
	return &wire.Task{Id: id, Class: "scoring", SlaMs: float32(10 * control.DefaultShedPI.UrgentMs), CostMs: 5}
}

func decideOne(t *testing.T, cl *client.Client, task *wire.Task) uint32 {
	t.Helper()
	resp, err := cl.Decide(context.Background(), []*wire.Task{task})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetDecisions()[0].GetPriority()
}

// Where the model's members disagree, or a task's state lies outside its
// training, the guard's controller decides, and the metric counts it; with
// the guard off (or told to ignore that reason) the model decides.
func TestGuardDecidesWhereTheModelIsUnsure(t *testing.T) {
	meta := policy.CurrentMetadata("disputed", "test")
	disputed := writeModelMeta(t, disputedMLP(), meta)
	far := meta
	far.Ranges = &policy.FeatureRanges{}
	var ones policy.State
	for i := range ones {
		ones[i] = 1
	}
	far.Ranges.Observe(ones) // a model trained only on states of all ones
	outside := writeModelMeta(t, alwaysMLP(4), far)
	const disagree, outOfRange = `triage_guard_decisions_total{reason="disagree"}`, `triage_guard_decisions_total{reason="out_of_range"}`
	for _, c := range []struct {
		name                 string
		cfg                  Config
		want                 uint32
		disagree, outOfRange float64
	}{
		{"members disagree", Config{ModelPath: disputed}, 2, 1, 0},
		{"members disagree, guard off", Config{ModelPath: disputed, Guard: GuardNone}, 4, 0, 0},
		{"members disagree, agreement not guarded", Config{ModelPath: disputed, GuardMinAgreement: -1}, 4, 0, 0},
		{"out of range", Config{ModelPath: outside, Guard: "shed-pi"}, 2, 0, 1},
		{"out of range, range not guarded", Config{ModelPath: outside, GuardIgnoreRange: true}, 4, 0, 0},
	} {
		c.cfg.NoEBPF = true
		ta := startAgent(t, c.cfg)
		if got := decideOne(t, ta.dial(t), normal(1)); got != c.want {
			t.Errorf("%s: priority %d, want %d", c.name, got, c.want)
		}
		if d, o := ta.metric(t, disagree), ta.metric(t, outOfRange); d != c.disagree || o != c.outOfRange {
			t.Errorf("%s: guard decisions disagree %v out_of_range %v, want %v and %v", c.name, d, o, c.disagree, c.outOfRange)
		}
		if got := ta.metric(t, `triage_decisions_total{priority="`+string(rune('0'+c.want))+`"}`); got != 1 {
			t.Errorf("%s: decisions at the served priority %d: %v, want 1", c.name, c.want, got)
		}
		ta.stop()
	}
}

// Every outcome reaches the guard's controller, whoever decided the task:
// gradient2 admits its initial limit of tasks in flight and sends the next
// to the background, and admits again once outcomes, timeouts or
// re-decisions of the same id have ended the tasks in flight.
func TestGuardControllerSeesEveryFinishedTask(t *testing.T) {
	ta := startAgent(t, Config{NoEBPF: true, ModelPath: writeModelMeta(t, disputedMLP(), policy.CurrentMetadata("disputed", "test")),
		Guard: "gradient2", TaskTimeout: time.Second})
	cl := ta.dial(t)
	ctx := context.Background()
	limit := uint64(control.DefaultGradient2.InitialLimit)
	if limit < 2 || control.DefaultGradient2.WindowSamples <= int(limit)+1 {
		t.Fatalf("the test needs an initial limit of 2 or more and a window longer than it: %+v", control.DefaultGradient2)
	}
	fill := func(from uint64) {
		t.Helper()
		for id := from; id < from+limit; id++ {
			if p := decideOne(t, cl, normal(id)); p != 2 {
				t.Fatalf("task %d of %d in flight: priority %d, want gradient2's 2", id-from+1, limit, p)
			}
		}
	}
	fill(1)
	// No task has finished yet, so the limit is still the initial one.
	if p := decideOne(t, cl, normal(limit+1)); p != 0 {
		t.Fatalf("task %d in flight: priority %d, want gradient2's background 0", limit+1, p)
	}
	var outs []*wire.Outcome
	for id := uint64(1); id <= limit+1; id++ {
		outs = append(outs, &wire.Outcome{Id: id, LatencyMs: 6, ServiceMs: 5, SlaMet: true})
	}
	if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
		t.Fatal(err)
	}
	// Outcomes ended them all: as many are admitted again (fewer outcomes
	// than one window of samples: the limit has not moved).
	fill(100)
	// Timeouts end them too.
	time.Sleep(1500 * time.Millisecond)
	waitFor(t, 5*time.Second, "the tasks to time out", func() bool { return ta.tracker.len() == 0 })
	// A re-decided id replaces its earlier decision, whose outcome will
	// never come: 30 decisions of one id are one task in flight.
	for range 30 {
		if p := decideOne(t, cl, normal(500)); p != 2 {
			t.Fatalf("re-deciding one id: priority %d, want 2 (one task in flight)", p)
		}
	}
}

func TestGuardConfig(t *testing.T) {
	for _, c := range []struct {
		in        Config
		guard     string
		agreement float64
	}{
		{Config{}, DefaultGuard, guard.DefaultMinAgreement},
		{Config{Guard: "shed-pi", GuardMinAgreement: 0.8}, "shed-pi", 0.8},
		{Config{Guard: GuardNone, GuardMinAgreement: -1}, GuardNone, 0},
	} {
		got, err := c.in.withDefaults()
		if err != nil || got.Guard != c.guard || got.GuardMinAgreement != c.agreement {
			t.Errorf("%+v: guard %q agreement %v (%v), want %q and %v", c.in, got.Guard, got.GuardMinAgreement, err, c.guard, c.agreement)
		}
	}
	for in, want := range map[float64]float64{0: guard.DefaultKeepUrgentMs, 30: 30, -1: 0} {
		if got, err := (Config{GuardKeepUrgentMs: in}).withDefaults(); err != nil || got.GuardKeepUrgentMs != want {
			t.Errorf("GuardKeepUrgentMs %v: %v (%v), want %v", in, got.GuardKeepUrgentMs, err, want)
		}
	}
	for in, want := range map[float64]float64{0: guard.DefaultMinAdvantage, 0.05: 0.05, -1: 0} {
		if got, err := (Config{GuardMinAdvantage: in}).withDefaults(); err != nil || got.GuardMinAdvantage != want {
			t.Errorf("GuardMinAdvantage %v: %v (%v), want %v", in, got.GuardMinAdvantage, err, want)
		}
	}
	for _, bad := range []Config{{Guard: "pid"}, {GuardMinAgreement: 1.5}, {GuardMinAgreement: math.NaN()}, {GuardKeepUrgentMs: math.Inf(1)}, {GuardKeepUrgentMs: math.NaN()},
		{GuardMinAdvantage: math.Inf(1)}, {GuardMinAdvantage: math.NaN()}} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v, want ErrBadConfig", bad, err)
		}
	}
}

// wantGuardDecision is the first check of a guard rule's test: task,
// decided through cl as the first decision the rule takes over on ta, is
// served at the guard controller's priority want (not the model's), and
// triage_guard_decisions_total counts it, once, under reason.
func wantGuardDecision(t *testing.T, ta *testAgent, cl *client.Client, task *wire.Task, want uint32, reason string) {
	t.Helper()
	if p := decideOne(t, cl, task); p != want {
		t.Fatalf("%s: priority %d, want the guard controller's %d", reason, p, want)
	}
	if got := ta.metric(t, `triage_guard_decisions_total{reason="`+reason+`"}`); got != 1 {
		t.Fatalf("%s counted %v, want 1", reason, got)
	}
}

// A model sure that everything belongs in the background: the guard keeps
// urgent work (SLA under --guard-keep-urgent-ms) at its controller's level,
// counts it, and publishes the same in the decision table; with the rule
// off, the model's 0 stands.
func TestGuardKeepsUrgentWorkOutOfTheBackground(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model.onnx")
	writeModel(t, model, alwaysMLP(0), "always-0")
	on := localAgent(t, Config{ModelPath: model})
	cl := localClient(t, on, client.Config{})
	wantGuardDecision(t, on, cl, urgentTask(1), 4, "kept_urgent")
	if p := decideOne(t, cl, batchTask(2)); p != 0 {
		t.Fatalf("a 2 s task: priority %d, want the model's 0", p)
	}
	if l := untilLocal(t, cl, urgentTask(3)); l != 4 {
		t.Fatalf("the table's level for urgent work: %d, want 4", l)
	}
	off := localAgent(t, Config{ModelPath: model, GuardKeepUrgentMs: -1})
	if p := decideOne(t, localClient(t, off, client.Config{}), urgentTask(4)); p != 0 {
		t.Fatalf("rule off: priority %d, want the model's 0", p)
	}
}

// A model that prefers priority 3 by a Q-value of 10: with a minimum
// advantage above that, the guard's controller (reserve-rule: a 2 s task
// to the background) decides, counts it and the decision table says the
// same; below it, the model's 3 stands.
func TestGuardServesTheControllerWhereTheModelIsNotAheadByTheMargin(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model.onnx")
	writeModel(t, model, alwaysMLP(3), "always-3")
	strict := localAgent(t, Config{ModelPath: model, Guard: "reserve-rule", GuardMinAdvantage: 20})
	cl := localClient(t, strict, client.Config{})
	wantGuardDecision(t, strict, cl, batchTask(1), 0, "slim_margin")
	if l := untilLocal(t, cl, batchTask(2)); l != 0 {
		t.Fatalf("the table's level for a 2 s task: %d, want reserve-rule's 0", l)
	}
	loose := localAgent(t, Config{ModelPath: model, Guard: "reserve-rule", GuardMinAdvantage: 5})
	if p := decideOne(t, localClient(t, loose, client.Config{}), batchTask(3)); p != 3 {
		t.Fatalf("margin 5: priority %d, want the model's 3", p)
	}
}
