package train

import (
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/guard"
)

// ModelRows are a model's rows of an evaluation: dqn, the model through its
// guard as the agent serves it; dqn-unguarded, the network alone (when there
// is a guard); dqn-ablated, the guarded model blind to the kernel (when
// ablate). The guarded policy is returned for its counts (nil without a
// guard). Each row has a guard of its own: a guard holds its controller's
// state. Every row's executor orders a level by order.
func ModelRows(sess policy.Decider, guardName string, cfg guard.Config, ablate bool, order AnswerOrder) ([]Policy, *GuardedPolicy, error) {
	blind := &AblatedDecider{Decider: sess, Off: policy.KernelFeatures}
	if guardName == guard.None {
		rows := []Policy{&DeciderPolicy{Label: "dqn", Decider: sess, Order: order}}
		if ablate {
			rows = append(rows, &DeciderPolicy{Label: "dqn-ablated", Decider: blind, Order: order})
		}
		return rows, nil, nil
	}
	mk := func(label string, d policy.Decider) (*GuardedPolicy, error) {
		g, err := guard.Named(guardName, cfg)
		if err != nil {
			return nil, err
		}
		p := NewGuardedPolicy(label, d, g)
		p.Order = order
		return p, nil
	}
	dqn, err := mk("dqn", sess)
	if err != nil {
		return nil, nil, err
	}
	rows := []Policy{dqn, &DeciderPolicy{Label: "dqn-unguarded", Decider: sess, Order: order}}
	if ablate {
		abl, err := mk("dqn-ablated", blind)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, abl)
	}
	return rows, dqn, nil
}
