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
type MLP struct {
	Layers []Dense
}

// ErrBadShape reports an MLP whose layers do not chain.
var ErrBadShape = errors.New("policy: bad MLP shape")

// Validate checks that the layers chain from NumFeatures inputs to NumActions outputs.
func (m *MLP) Validate() error {
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
	if prev != NumActions {
		return fmt.Errorf("%w: %d outputs, want %d", ErrBadShape, prev, NumActions)
	}
	return nil
}

// Forward computes the Q-values of one state into q, using scratch space of
// at least 2*max(layer width) floats (nil allocates).
func (m *MLP) Forward(s *State, q *[NumActions]float32, scratch []float32) {
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
	copy(q[:], in[:NumActions])
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
