package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A task misses its SLA at the top priority exactly where its expected cost
// plus the top level's backlog per worker exceed the SLA; an unknown SLA
// (every relative feature neutral) never does.
func TestMissesSLAAtTopWeighsCostAndTheTopBacklog(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    Inputs
		wantM bool
	}{
		{"empty queue", Inputs{SLAMs: 20, CostMs: 2, Workers: 4, InFlightMs: [NumActions]float64{}}, false},
		{"backlog at the top leaves room", Inputs{SLAMs: 46, CostMs: 17, Workers: 4, InFlightMs: [NumActions]float64{4: 100}}, false},
		{"backlog at the top leaves none", Inputs{SLAMs: 46, CostMs: 17, Workers: 4, InFlightMs: [NumActions]float64{4: 120}}, true},
		{"backlog below the top only", Inputs{SLAMs: 46, CostMs: 17, Workers: 4, InFlightMs: [NumActions]float64{0: 500, 2: 500}}, false},
		{"cost alone over the SLA", Inputs{SLAMs: 10, CostMs: 12, Workers: 4}, true},
		{"no SLA", Inputs{SLAMs: math.NaN(), CostMs: 17, Workers: 4, InFlightMs: [NumActions]float64{4: 1e6}}, false},
	} {
		s := Vector(&c.in)
		if got := s.MissesSLAAtTop(); got != c.wantM {
			t.Errorf("%s: misses %v, want %v (cost/SLA %.3f, top backlog/SLA %.3f)", c.name, got, c.wantM, unsquash(s[FeatCostOverSLA]), unsquash(s[FeatBacklogTop]))
		}
	}
}

// Both deciders, the plain Go MLP and ONNX Runtime, mark each decision
// from its state, as they mark the range.
func TestDecisionsSayWhetherTheTaskMissesItsSLA(t *testing.T) {
	m := randomMLP(rand.New(rand.NewPCG(46, 1)), 8)
	meta := testMetadata("reach")
	states := []State{
		Vector(&Inputs{SLAMs: 20, CostMs: 2, Workers: 4}),
		Vector(&Inputs{SLAMs: 20, CostMs: 2, Workers: 4, InFlightMs: [NumActions]float64{4: 400}}),
	}
	for name, d := range map[string]Decider{"go": NewGoDecider(m, meta), "ort": loadCPU(t, mustMarshal(t, m, meta))} {
		out := make([]Decision, len(states))
		if err := d.Decide(states, out); err != nil {
			t.Fatal(err)
		}
		if out[0].MissesSLA || !out[1].MissesSLA {
			t.Errorf("%s: MissesSLA %v and %v, want false (empty queue) and true (100 ms of top work per worker ahead of a 20 ms SLA)", name, out[0].MissesSLA, out[1].MissesSLA)
		}
	}
}
