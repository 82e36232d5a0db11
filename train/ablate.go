package train

import "github.com/triage-agent/triage/policy"

// AblatedDecider runs Decider with the features Off at their neutral
// values (policy.Neutral), as the agent reports a source it lacks: the
// model decides as on a node whose kernel says nothing. `triage eval
// --ablate kernel` measures with it how much of a result comes from the
// kernel features.
type AblatedDecider struct {
	policy.Decider
	Off     []int
	scratch []policy.State
}

// Decide implements policy.Decider on a copy of states.
func (a *AblatedDecider) Decide(states []policy.State, out []policy.Decision) error {
	a.scratch = append(a.scratch[:0], states...)
	for i := range a.scratch {
		for _, f := range a.Off {
			a.scratch[i][f] = policy.Neutral[f]
		}
	}
	return a.Decider.Decide(a.scratch, out)
}
