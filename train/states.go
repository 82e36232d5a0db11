package train

import "github.com/triage-agent/triage/policy"

// Comparing the states a policy decided on in the simulator with those the
// agent logged on a real node (docs/calibration.md, "Simulator against
// real execution"): a feature whose real values sit outside the simulated
// spread is one the model meets out of its training, where the
// simulator's node is not the real one.

// Spreads is each feature's Spread over states (zeros for none).
func Spreads(states []policy.State) [policy.NumFeatures]Spread {
	var out [policy.NumFeatures]Spread
	if len(states) == 0 {
		return out
	}
	col := make([]float64, len(states))
	for f := range out {
		for i := range states {
			col[i] = float64(states[i][f])
		}
		out[f] = spread(col)
	}
	return out
}

// Outside reports whether real's median lies outside sim's 10–90% band,
// by more than tol (the features' unit is [0, 1]).
func (sim Spread) Outside(real Spread, tol float64) bool {
	return real.P50 < sim.P10-tol || real.P50 > sim.P90+tol
}

// RecordingDecider passes every decision to Decider and keeps the states
// it was asked about, in order.
type RecordingDecider struct {
	policy.Decider
	States []policy.State
}

func (r *RecordingDecider) Decide(states []policy.State, out []policy.Decision) error {
	r.States = append(r.States, states...)
	return r.Decider.Decide(states, out)
}
