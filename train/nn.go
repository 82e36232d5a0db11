package train

import (
	"math"
	"math/rand/v2"

	"github.com/triage-agent/triage/policy"
)

// newMLP builds a policy.MLP with He-initialised weights, so the trained
// parameters are exported as they are (no layout conversion).
func newMLP(rng *rand.Rand, hidden []int) *policy.MLP {
	m := &policy.MLP{}
	in := policy.NumFeatures
	sizes := append(append([]int(nil), hidden...), policy.NumActions)
	for li, out := range sizes {
		d := policy.Dense{In: in, Out: out, W: make([]float32, in*out), B: make([]float32, out)}
		std := math.Sqrt(2 / float64(in))
		if li == len(sizes)-1 {
			std = math.Sqrt(1/float64(in)) * 0.1 // small initial Q-values
		}
		for i := range d.W {
			d.W[i] = float32(rng.NormFloat64() * std)
		}
		m.Layers = append(m.Layers, d)
		in = out
	}
	return m
}

func cloneMLP(m *policy.MLP) *policy.MLP {
	c := &policy.MLP{Layers: make([]policy.Dense, len(m.Layers))}
	for i, l := range m.Layers {
		c.Layers[i] = policy.Dense{In: l.In, Out: l.Out, W: append([]float32(nil), l.W...), B: append([]float32(nil), l.B...)}
	}
	return c
}

func copyMLP(dst, src *policy.MLP) {
	for i := range src.Layers {
		copy(dst.Layers[i].W, src.Layers[i].W)
		copy(dst.Layers[i].B, src.Layers[i].B)
	}
}

// grads mirrors an MLP's parameters.
type grads struct{ w, b [][]float32 }

func newGrads(m *policy.MLP) *grads {
	g := &grads{}
	for _, l := range m.Layers {
		g.w = append(g.w, make([]float32, len(l.W)))
		g.b = append(g.b, make([]float32, len(l.B)))
	}
	return g
}

func (g *grads) zero() {
	for i := range g.w {
		clear(g.w[i])
		clear(g.b[i])
	}
}

// learner holds the scratch space of forward and backward passes.
type learner struct {
	net  *policy.MLP
	g    *grads
	acts [][]float32 // per layer input activations (post-ReLU), layer 0 = state
	pre  [][]float32 // per layer pre-activation outputs
	dOut [][]float32
	adam *adam
}

func newLearner(net *policy.MLP, lr float64) *learner {
	l := &learner{net: net, g: newGrads(net), adam: newAdam(net, lr)}
	for _, d := range net.Layers {
		l.acts = append(l.acts, make([]float32, d.In))
		l.pre = append(l.pre, make([]float32, d.Out))
		l.dOut = append(l.dOut, make([]float32, d.Out))
	}
	return l
}

// forward computes Q(s) keeping activations for backward.
func (l *learner) forward(s *policy.State) []float32 {
	copy(l.acts[0], s[:])
	for li, d := range l.net.Layers {
		x := l.acts[li]
		y := l.pre[li]
		for o := 0; o < d.Out; o++ {
			row := d.W[o*d.In : (o+1)*d.In]
			acc := d.B[o]
			for i, v := range x {
				acc += row[i] * v
			}
			y[o] = acc
		}
		if li+1 < len(l.net.Layers) {
			nx := l.acts[li+1]
			for o, v := range y {
				nx[o] = max(v, 0)
			}
		}
	}
	return l.pre[len(l.pre)-1]
}

// backward accumulates the gradient of dLoss/dQ[a] = d into l.g, for the
// activations of the last forward.
func (l *learner) backward(a int, d float32) {
	last := len(l.net.Layers) - 1
	clear(l.dOut[last])
	l.dOut[last][a] = d
	for li := last; li >= 0; li-- {
		dl := l.net.Layers[li]
		dy := l.dOut[li]
		x := l.acts[li]
		gw, gb := l.g.w[li], l.g.b[li]
		var dx []float32
		if li > 0 {
			dx = l.dOut[li-1]
			clear(dx)
		}
		for o := 0; o < dl.Out; o++ {
			g := dy[o]
			if g == 0 {
				continue
			}
			gb[o] += g
			row := gw[o*dl.In : (o+1)*dl.In]
			for i, v := range x {
				row[i] += g * v
			}
			if dx != nil {
				wrow := dl.W[o*dl.In : (o+1)*dl.In]
				for i := range dx {
					dx[i] += g * wrow[i]
				}
			}
		}
		if dx != nil {
			// Through the ReLU of the previous layer's output.
			for i, v := range l.pre[li-1] {
				if v <= 0 {
					dx[i] = 0
				}
			}
		}
	}
}

// adam is the Adam optimiser (Kingma & Ba) over an MLP's parameters.
type adam struct {
	lr, b1, b2, eps float64
	t               int
	m, v            *grads
}

func newAdam(net *policy.MLP, lr float64) *adam {
	return &adam{lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8, m: newGrads(net), v: newGrads(net)}
}

// step applies gradient g scaled by 1/n and clipped to a global norm of clip.
func (o *adam) step(net *policy.MLP, g *grads, n int, clip float64) {
	o.t++
	scale := 1 / float64(n)
	norm := 0.0
	for i := range g.w {
		for _, v := range g.w[i] {
			norm += float64(v) * float64(v)
		}
		for _, v := range g.b[i] {
			norm += float64(v) * float64(v)
		}
	}
	norm = math.Sqrt(norm) * scale
	if clip > 0 && norm > clip {
		scale *= clip / norm
	}
	c1 := 1 - math.Pow(o.b1, float64(o.t))
	c2 := 1 - math.Pow(o.b2, float64(o.t))
	upd := func(p, gr, m, v []float32) {
		for i := range p {
			gi := float64(gr[i]) * scale
			mi := o.b1*float64(m[i]) + (1-o.b1)*gi
			vi := o.b2*float64(v[i]) + (1-o.b2)*gi*gi
			m[i], v[i] = float32(mi), float32(vi)
			p[i] -= float32(o.lr * (mi / c1) / (math.Sqrt(vi/c2) + o.eps))
		}
	}
	for i, l := range net.Layers {
		upd(l.W, g.w[i], o.m.w[i], o.v.w[i])
		upd(l.B, g.b[i], o.m.b[i], o.v.b[i])
	}
}
