package train

import "github.com/triage-agent/triage/policy"

// EnsembleMLP returns one MLP whose Q-values are exactly the mean of the
// members' (which must share a depth): hidden layers are stacked side by
// side with block-diagonal weights, and the output layer averages. It is a
// plain policy.MLP, so it exports and runs like any other model.
//
// Why: near a decision boundary two priorities' Q-values differ by less
// than one network's training noise, so a single network's choice there is
// partly a coin flip; the members' noise is independent (different seeds),
// and averaging it away makes the policy's choices consistent.
func EnsembleMLP(members []*policy.MLP) *policy.MLP {
	if len(members) == 1 {
		return cloneMLP(members[0])
	}
	depth := len(members[0].Layers)
	out := &policy.MLP{}
	for li := 0; li < depth; li++ {
		in, outW := 0, 0
		for _, m := range members {
			l := m.Layers[li]
			if li == 0 {
				in = l.In
			} else {
				in += l.In
			}
			if li == depth-1 {
				outW = l.Out
			} else {
				outW += l.Out
			}
		}
		d := policy.Dense{In: in, Out: outW, W: make([]float32, in*outW), B: make([]float32, outW)}
		rowOff, colOff := 0, 0
		for _, m := range members {
			l := m.Layers[li]
			for o := 0; o < l.Out; o++ {
				for i := 0; i < l.In; i++ {
					w := l.W[o*l.In+i]
					switch {
					case li == 0:
						d.W[(rowOff+o)*in+i] = w
					case li == depth-1:
						d.W[o*in+colOff+i] += w / float32(len(members))
					default:
						d.W[(rowOff+o)*in+colOff+i] = w
					}
				}
				if li == depth-1 {
					d.B[o] += l.B[o] / float32(len(members))
				} else {
					d.B[rowOff+o] = l.B[o]
				}
			}
			if li != depth-1 {
				rowOff += l.Out
			}
			if li != 0 {
				colOff += l.In
			}
		}
		out.Layers = append(out.Layers, d)
	}
	return out
}
