package train_test

import (
	"testing"

	"github.com/triage-agent/triage/internal/testmodel"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/train"
)

// The embedded default model, run through ONNX Runtime exactly as the
// agent and `triage eval` run it, must beat FIFO on a short overload. ONNX
// Runtime is required: without the library (TRIAGE_ONNXRUNTIME_LIB, or the
// cache of scripts/fetch-onnxruntime.sh) this fails rather than skips.
func TestDefaultModelBeatsFIFOOnOverload(t *testing.T) {
	sess := loadDefaultModel(t)
	sc, err := train.ParseScenario([]byte(`{"name":"short-overload","seed":77,"duration_s":20,"workers":4,
	 "arrival":{"process":"poisson","rate_per_s":160},
	 "classes":[{"name":"fast","share":0.6,"sla_ms":25,"cost_ms":{"dist":"lognormal","median":2.5,"p99":9}},
	            {"name":"mid","share":0.3,"sla_ms":250,"cost_ms":{"dist":"lognormal","median":18,"p99":70}},
	            {"name":"slow","share":0.1,"sla_ms":2500,"cost_ms":{"dist":"lognormal","median":180,"p99":800}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := train.Evaluate(sc, 0, &train.DeciderPolicy{Label: "dqn", Decider: sess}, train.FIFO{})
	if err != nil {
		t.Fatal(err)
	}
	d, f := ev.Policies["dqn"], ev.Policies["fifo"]
	t.Logf("model %s: dqn SLA %.4f goodput %.1f/s; fifo SLA %.4f goodput %.1f/s", sess.Version(), d.SLAAttainment, d.GoodputPerS, f.SLAAttainment, f.GoodputPerS)
	if d.SLAAttainment <= f.SLAAttainment || d.GoodputPerS < 2*f.GoodputPerS {
		t.Fatalf("default model does not beat FIFO on overload: SLA %.4f vs %.4f, goodput %.1f vs %.1f", d.SLAAttainment, f.SLAAttainment, d.GoodputPerS, f.GoodputPerS)
	}
}

// The ONNX Runtime session and the plain Go forward pass of the same
// weights must make the same decisions in the simulator, so training-time
// evaluation (Go) and serving (ORT) agree.
func TestORTAndGoAgreeInTheSimulator(t *testing.T) {
	sess := loadDefaultModel(t)
	sc, err := train.ParseScenario([]byte(`{"name":"agree","seed":5,"duration_s":10,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":60},
	 "classes":[{"name":"a","share":0.7,"sla_ms":20,"cost_ms":{"dist":"exponential","mean":3}},
	            {"name":"b","share":0.3,"sla_ms":500,"cost_ms":{"dist":"pareto","min":20,"alpha":2.5}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ort, err := train.Run(sc, &train.DeciderPolicy{Label: "ort", Decider: sess}, train.SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	gor, err := train.Run(sc, &train.MLPPolicy{Label: "go", Net: sess.MLP()}, train.SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ort {
		if ort[i].Level != gor[i].Level {
			t.Fatalf("task %d: ONNX Runtime chose %d, Go forward %d", i, ort[i].Level, gor[i].Level)
		}
	}
}

// The shipped policy as the agent serves it (the default model through
// ONNX Runtime and its default guard) on the scenarios its guard was
// chosen on: 60 generated scenarios (seeds 200 and 300). Its mean SLA
// attainment is at least its guard's less half a point (the issue's
// bound), and within half a point of the network's alone: the guard's
// choice (docs/policy.md) holds for the model that ships.
func TestDefaultPolicyAtLeastItsGuardOnTheSelectionScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("60 generated scenarios, about 15 s: not in -short")
	}
	sess := loadDefaultModel(t)
	var dqn, alone, ctl float64
	scs := append(train.Generate(200, 30, train.GenConfig{}), train.Generate(300, 30, train.GenConfig{})...)
	for _, sc := range scs {
		g, err := guard.Named(guard.DefaultController, guard.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		c, err := control.New(guard.DefaultController)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := train.Evaluate(sc, 0, train.NewGuardedPolicy("dqn", sess, g),
			&train.DeciderPolicy{Label: "alone", Decider: sess}, train.Controller{C: c})
		if err != nil {
			t.Fatal(err)
		}
		dqn += ev.Policies["dqn"].SLAAttainment / float64(len(scs))
		alone += ev.Policies["alone"].SLAAttainment / float64(len(scs))
		ctl += ev.Policies[guard.DefaultController].SLAAttainment / float64(len(scs))
	}
	t.Logf("mean SLA attainment over %d generated scenarios: guarded %.4f, network alone %.4f, %s %.4f", len(scs), dqn, alone, guard.DefaultController, ctl)
	if dqn < ctl-0.005 {
		t.Errorf("the guarded policy %.4f is more than half a point under its guard %s's %.4f", dqn, guard.DefaultController, ctl)
	}
	if dqn < alone-0.005 {
		t.Errorf("the guard costs more than half a point: guarded %.4f, network alone %.4f", dqn, alone)
	}
}

// On each held-out shared scenario, on its own seed, the shipped policy
// is far ahead of the queue disciplines a service has without any policy
// (FIFO, EDF), and on overload its weighted goodput is at least 3.8×
// FIFO's. Where it stands against the rules and controllers is reported
// (docs/policy.md), not asserted: the shared files are validation.
func TestDefaultPolicyHeldOut(t *testing.T) {
	sess := loadDefaultModel(t)
	for _, name := range []string{"steady", "bursty", "overload"} {
		sc, err := train.LoadScenario("../testdata/heldout/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		g, err := guard.Named(guard.DefaultController, guard.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		ev, err := train.Evaluate(sc, 0, append([]train.Policy{train.NewGuardedPolicy("dqn", sess, g)}, train.Baselines(sc)...)...)
		if err != nil {
			t.Fatal(err)
		}
		dqn := ev.Policies["dqn"]
		best, bv := ev.BestBaseline("dqn", func(m train.Metrics) float64 { return m.SLAAttainment })
		t.Logf("%s: dqn SLA %.4f goodput %.2f/s; best baseline %s %.4f", name, dqn.SLAAttainment, dqn.GoodputPerS, best, bv)
		for _, p := range []string{"fifo", "edf"} {
			if b := ev.Policies[p]; dqn.SLAAttainment < b.SLAAttainment+0.05 {
				t.Errorf("%s: dqn SLA attainment %.4f not 5 points above %s's %.4f", name, dqn.SLAAttainment, p, b.SLAAttainment)
			}
		}
		if fifo := ev.Policies["fifo"].GoodputPerS; name == "overload" && dqn.GoodputPerS < 3.8*fifo {
			t.Errorf("overload: DQN goodput %.2f/s under 3.8× FIFO's %.2f/s", dqn.GoodputPerS, fifo)
		}
	}
}

// loadDefaultModel is the embedded default model in an ONNX Runtime session
// on the CPU, closed when the test ends.
func loadDefaultModel(t *testing.T) *policy.Session {
	t.Helper()
	return testmodel.Default(t, policy.Config{Device: policy.DeviceCPU})
}
