package train

import (
	"testing"

	"github.com/triage-agent/triage/policy"
)

func TestSpreadsAreEachFeaturesPercentiles(t *testing.T) {
	states := make([]policy.State, 101)
	for i := range states {
		states[i][policy.FeatQueue] = float32(i) / 100   // 0, 0.01, ..., 1
		states[i][policy.FeatSLA] = float32(100-i) / 100 // the same values, reversed
		states[i][policy.FeatCPUUtil] = 0.5              // constant
	}
	sp := Spreads(states)
	for _, f := range []int{policy.FeatQueue, policy.FeatSLA} {
		// The states hold float32s: 0.1 is float32(0.1) here.
		if s := sp[f]; s != (Spread{float64(float32(0.1)), 0.5, float64(float32(0.9))}) {
			t.Errorf("feature %d: %+v, want 0.1/0.5/0.9", f, s)
		}
	}
	if s := sp[policy.FeatCPUUtil]; s != (Spread{0.5, 0.5, 0.5}) {
		t.Errorf("constant feature: %+v", s)
	}
	if s := Spreads(nil)[0]; s != (Spread{}) {
		t.Errorf("no states: %+v", s)
	}
}

func TestSpreadOutside(t *testing.T) {
	sim := Spread{0.2, 0.3, 0.4}
	for _, c := range []struct {
		real Spread
		want bool
	}{
		{Spread{P50: 0.3}, false},
		{Spread{P50: 0.42}, false}, // within the tolerance
		{Spread{P50: 0.5}, true},
		{Spread{P50: 0.1}, true},
	} {
		if got := sim.Outside(c.real, 0.05); got != c.want {
			t.Errorf("real median %v against %+v: %v, want %v", c.real.P50, sim, got, c.want)
		}
	}
}

// The recorder sees the states a simulated policy decides on, and the
// decisions are the wrapped decider's.
func TestRecordingDeciderKeepsTheSimulatedStates(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"rec","seed":1,"duration_s":2,"workers":2,
	 "arrival":{"process":"poisson","rate_per_s":50},
	 "classes":[{"name":"a","share":1,"sla_ms":50,"cost_ms":{"dist":"constant","value":5}}]}`)
	rec := &RecordingDecider{Decider: constDecider(3)}
	outs, err := Run(sc, &DeciderPolicy{Label: "rec", Decider: rec}, SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.States) != len(outs) || len(outs) == 0 {
		t.Fatalf("%d states recorded for %d tasks", len(rec.States), len(outs))
	}
	for i := range outs {
		if outs[i].Level != 3 {
			t.Fatalf("task %d at level %d, want the decider's 3", i, outs[i].Level)
		}
	}
	if sp := Spreads(rec.States)[policy.FeatSLA]; sp.P50 <= 0 || sp.P50 >= 1 {
		t.Fatalf("the SLA feature of the recorded states: %+v", sp)
	}
}

// constDecider answers priority p for every state.
type constDecider int

func (p constDecider) Decide(states []policy.State, out []policy.Decision) error {
	for i := range states {
		out[i] = policy.Decision{Priority: int(p), Agreement: 1}
	}
	return nil
}

func (constDecider) Version() string { return "const" }
