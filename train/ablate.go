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
		neutralise(&a.scratch[i], a.Off)
	}
	return a.Decider.Decide(a.scratch, out)
}

// neutralise sets the features off of st to their neutral values.
func neutralise(st *policy.State, off []int) {
	for _, f := range off {
		st[f] = policy.Neutral[f]
	}
}

// blindMLP is MLPPolicy with the kernel features at their neutral values,
// as AblatedDecider does for a Decider: the trainer's validation measures
// a checkpoint's kernel share with it (DQNConfig.ValidationKernelWeight).
type blindMLP struct{ MLPPolicy }

func (p *blindMLP) Assign(t *Task, v *NodeView) (int, float64, error) {
	st := v.State
	neutralise(&st, policy.KernelFeatures)
	return p.greedy(&st), trainerOrder.Key(t), nil
}
