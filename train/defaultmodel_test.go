package train_test

import (
	"testing"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/defaultmodel"
	"github.com/triage-agent/triage/train"
)

// The embedded default model, run through ONNX Runtime exactly as the
// agent and `triage eval` run it, must beat FIFO on a short overload. ONNX
// Runtime is required: without the library (TRIAGE_ONNXRUNTIME_LIB, or the
// cache of scripts/fetch-onnxruntime.sh) this fails rather than skips.
func TestDefaultModelBeatsFIFOOnOverload(t *testing.T) {
	sess, err := policy.LoadBytes(defaultmodel.Bytes(), policy.Config{Device: policy.DeviceCPU})
	if err != nil {
		t.Fatalf("loading the default model through ONNX Runtime (run scripts/fetch-onnxruntime.sh and set TRIAGE_ONNXRUNTIME_LIB): %v", err)
	}
	defer sess.Close()
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
	sess, err := policy.LoadBytes(defaultmodel.Bytes(), policy.Config{Device: policy.DeviceCPU})
	if err != nil {
		t.Fatalf("loading the default model through ONNX Runtime: %v", err)
	}
	defer sess.Close()
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

// The bar, checked from a clean checkout: on each held-out shared
// scenario, on its own seed, the embedded default model through ONNX
// Runtime reaches at least every baseline's SLA attainment, and on
// overload its weighted goodput is above the best baseline's and at least
// 3.8× FIFO's. The simulator and the model are deterministic, so this is a
// regression test of the shipped model, not a statistical one.
func TestDefaultModelAtLeastEveryBaselineHeldOut(t *testing.T) {
	sess, err := policy.LoadBytes(defaultmodel.Bytes(), policy.Config{Device: policy.DeviceCPU})
	if err != nil {
		t.Fatalf("loading the default model through ONNX Runtime: %v", err)
	}
	defer sess.Close()
	for _, name := range []string{"steady", "bursty", "overload"} {
		sc, err := train.LoadScenario("../testdata/heldout/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		ev, err := train.Evaluate(sc, 0, append([]train.Policy{&train.DeciderPolicy{Label: "dqn", Decider: sess}}, train.Baselines(sc)...)...)
		if err != nil {
			t.Fatal(err)
		}
		dqn := ev.Policies["dqn"]
		for _, p := range ev.Order[1:] {
			if b := ev.Policies[p]; b.SLAAttainment > dqn.SLAAttainment {
				t.Errorf("%s: %s SLA attainment %.4f above the DQN's %.4f", name, p, b.SLAAttainment, dqn.SLAAttainment)
			}
		}
		best, gp := ev.BestBaseline("dqn", func(m train.Metrics) float64 { return m.GoodputPerS })
		t.Logf("%s: dqn SLA %.4f goodput %.2f/s; best baseline by goodput %s %.2f/s", name, dqn.SLAAttainment, dqn.GoodputPerS, best, gp)
		if name != "overload" {
			continue
		}
		if dqn.GoodputPerS <= gp {
			t.Errorf("overload: DQN goodput %.2f/s not above %s's %.2f/s", dqn.GoodputPerS, best, gp)
		}
		if fifo := ev.Policies["fifo"].GoodputPerS; dqn.GoodputPerS < 3.8*fifo {
			t.Errorf("overload: DQN goodput %.2f/s under 3.8× FIFO's %.2f/s", dqn.GoodputPerS, fifo)
		}
	}
}
