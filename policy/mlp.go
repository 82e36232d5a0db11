package policy

import (
	"errors"
	"fmt"
)

// Dense is one fully connected layer: y = W·x + B, with W stored row-major as
// Out rows of In values (the layout of ONNX Gemm with transB=1).
type Dense struct {
	In, Out int
	W       []float32 // len Out*In
	B       []float32 // len Out
}

// MLP is a stack of Dense layers with ReLU between them and none after the
// last. It is the network the DQN trains and the ONNX writer exports, and its
// Forward is the plain Go reference that the ONNX Runtime path is checked
// against.
//
// An MLP may hold an ensemble: Members > 1 networks side by side, whose last
// layer has NumActions*Members outputs, member-major (member k's Q-values
// at [k*NumActions, (k+1)*NumActions)). Its Q-values are the members' mean;
// the members stay visible so that a decider can say how far they agree
// (Decision.Agreement). Members 0 or 1 is a plain network.
type MLP struct {
	Layers  []Dense
	Members int
}

// MaxMembers bounds an ensemble's members: the reader refuses more, so a
// hostile file cannot ask for an output of arbitrary width.
const MaxMembers = 64

// ErrBadShape reports an MLP whose layers do not chain.
var ErrBadShape = errors.New("policy: bad MLP shape")

// NumMembers is the number of member networks: 1 for a plain network.
func (m *MLP) NumMembers() int { return max(1, m.Members) }

// Validate checks that the layers chain from NumFeatures inputs to
// NumActions outputs per member.
func (m *MLP) Validate() error {
	if m.Members < 0 || m.Members > MaxMembers {
		return fmt.Errorf("%w: %d members, want 0..%d", ErrBadShape, m.Members, MaxMembers)
	}
	if len(m.Layers) == 0 {
		return fmt.Errorf("%w: no layers", ErrBadShape)
	}
	prev := NumFeatures
	for i, l := range m.Layers {
		if l.In != prev || l.Out <= 0 || len(l.W) != l.In*l.Out || len(l.B) != l.Out {
			return fmt.Errorf("%w: layer %d is %dx%d with %d weights and %d biases, input %d", ErrBadShape, i, l.Out, l.In, len(l.W), len(l.B), prev)
		}
		prev = l.Out
	}
	if want := NumActions * m.NumMembers(); prev != want {
		return fmt.Errorf("%w: %d outputs, want %d (%d actions × %d members)", ErrBadShape, prev, want, NumActions, m.NumMembers())
	}
	return nil
}

// Forward computes the Q-values of one state into q (the members' mean for
// an ensemble), using scratch space of at least ScratchLen floats (nil or
// shorter allocates).
func (m *MLP) Forward(s *State, q *[NumActions]float32, scratch []float32) {
	m.mean(m.forward(s, scratch), q)
}

// ForwardMembers is Forward that also copies every member's Q-values into
// members (at least NumActions*NumMembers() floats, member-major). For a
// plain network members[:NumActions] equals q.
func (m *MLP) ForwardMembers(s *State, q *[NumActions]float32, members, scratch []float32) {
	out := m.forward(s, scratch)
	copy(members, out)
	m.mean(out, q)
}

// ScratchLen is the scratch space Forward needs.
func (m *MLP) ScratchLen() int { return 2 * m.maxWidth() }

// forward runs the layers and returns the last one's outputs, a slice of
// scratch.
func (m *MLP) forward(s *State, scratch []float32) []float32 {
	w := m.maxWidth()
	if len(scratch) < 2*w {
		scratch = make([]float32, 2*w)
	}
	in := scratch[:w]
	out := scratch[w : 2*w]
	copy(in, s[:])
	for li, l := range m.Layers {
		last := li == len(m.Layers)-1
		for o := 0; o < l.Out; o++ {
			row := l.W[o*l.In : (o+1)*l.In]
			acc := l.B[o]
			for i, x := range in[:l.In] {
				acc += row[i] * x
			}
			if !last && acc < 0 {
				acc = 0
			}
			out[o] = acc
		}
		in, out = out, in
	}
	return in[:NumActions*m.NumMembers()]
}

// mean averages the members' Q-values into q, as the model file's final
// Gemm does: a sum of each member's value times 1/K, in member order.
func (m *MLP) mean(out []float32, q *[NumActions]float32) {
	k := m.NumMembers()
	if k == 1 {
		copy(q[:], out[:NumActions])
		return
	}
	inv := 1 / float32(k)
	for a := range q {
		var acc float32
		for j := 0; j < k; j++ {
			acc += out[j*NumActions+a] * inv
		}
		q[a] = acc
	}
}

func (m *MLP) maxWidth() int {
	w := NumFeatures
	for _, l := range m.Layers {
		if l.Out > w {
			w = l.Out
		}
	}
	return w
}

// Mean returns a plain network (Members 0) whose Q-values are this one's:
// for an ensemble, the last layer averages the members' rows. What a
// trainer that knows only single networks (fine-tuning) starts from. The
// layers are copied; m is not changed.
func (m *MLP) Mean() *MLP {
	c := &MLP{Layers: make([]Dense, len(m.Layers))}
	for i, l := range m.Layers {
		c.Layers[i] = Dense{In: l.In, Out: l.Out, W: append([]float32(nil), l.W...), B: append([]float32(nil), l.B...)}
	}
	k := m.NumMembers()
	if k == 1 || len(m.Layers) == 0 {
		return c
	}
	l := m.Layers[len(m.Layers)-1]
	last := Dense{In: l.In, Out: NumActions, W: make([]float32, NumActions*l.In), B: make([]float32, NumActions)}
	inv := 1 / float32(k)
	for j := 0; j < k; j++ {
		for a := 0; a < NumActions; a++ {
			o := j*NumActions + a
			for i := 0; i < l.In; i++ {
				last.W[a*l.In+i] += l.W[o*l.In+i] * inv
			}
			last.B[a] += l.B[o] * inv
		}
	}
	c.Layers[len(c.Layers)-1] = last
	return c
}

// Argmax returns the index of the largest Q-value; ties go to the lower priority.
func Argmax(q *[NumActions]float32) int {
	best := 0
	for i := 1; i < NumActions; i++ {
		if q[i] > q[best] {
			best = i
		}
	}
	return best
}

// agreement is the fraction of the k members (member-major Q-values in
// members) whose own argmax is best.
func agreement(members []float32, k, best int) float32 {
	if k <= 1 {
		return 1
	}
	agree := 0
	for j := 0; j < k; j++ {
		q := (*[NumActions]float32)(members[j*NumActions : (j+1)*NumActions])
		if Argmax(q) == best {
			agree++
		}
	}
	return float32(agree) / float32(k)
}
