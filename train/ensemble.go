package train

import "github.com/triage-agent/triage/policy"

// EnsembleMLP returns one MLP that holds every member (which must share a
// depth): hidden layers are stacked side by side with block-diagonal
// weights, and the last layer keeps each member's Q-values, member-major
// (policy.MLP.Members). Its Q-values are exactly the members' mean; the
// model file carries both, so the agent's guard can see where the members
// disagree.
//
// Why an ensemble: near a decision boundary two priorities' Q-values
// differ by less than one network's training noise, so a single network's
// choice there is partly a coin flip; the members' noise is independent
// (different seeds), and averaging it away makes the policy's choices
// consistent, while their disagreement says where it is a coin flip still.
func EnsembleMLP(members []*policy.MLP) *policy.MLP {
	if len(members) == 1 {
		return cloneMLP(members[0])
	}
	depth := len(members[0].Layers)
	out := &policy.MLP{Members: len(members)}
	for li := 0; li < depth; li++ {
		in, outW := 0, 0
		for _, m := range members {
			l := m.Layers[li]
			if li == 0 {
				in = l.In
			} else {
				in += l.In
			}
			outW += l.Out
		}
		d := policy.Dense{In: in, Out: outW, W: make([]float32, in*outW), B: make([]float32, outW)}
		rowOff, colOff := 0, 0
		for _, m := range members {
			l := m.Layers[li]
			for o := 0; o < l.Out; o++ {
				for i := 0; i < l.In; i++ {
					w := l.W[o*l.In+i]
					if li == 0 {
						d.W[(rowOff+o)*in+i] = w
					} else {
						d.W[(rowOff+o)*in+colOff+i] = w
					}
				}
				d.B[rowOff+o] = l.B[o]
			}
			rowOff += l.Out
			if li != 0 {
				colOff += l.In
			}
		}
		out.Layers = append(out.Layers, d)
	}
	return out
}
