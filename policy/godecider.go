package policy

import (
	"fmt"
	"sync"
)

// GoDecider runs the plain Go forward pass of an MLP as a Decider. It is the
// reference the ONNX Runtime session is checked against and a fallback where
// no runtime library is available. Safe for concurrent use.
type GoDecider struct {
	mlp     *MLP
	meta    Metadata
	invalid error     // m.Validate() at construction; Decide refuses a bad MLP instead of panicking
	scratch sync.Pool // *[]float32: the forward pass's scratch, then the members' Q-values
}

// NewGoDecider wraps m; m must not change afterwards. An m that fails
// Validate makes every Decide return that error.
func NewGoDecider(m *MLP, meta Metadata) *GoDecider {
	d := &GoDecider{mlp: m, meta: meta}
	if m == nil {
		d.mlp, d.invalid = &MLP{}, fmt.Errorf("%w: nil MLP", ErrBadShape)
	} else {
		d.invalid = m.Validate()
	}
	n := d.mlp.ScratchLen() + NumActions*d.mlp.NumMembers()
	d.scratch.New = func() any {
		s := make([]float32, n)
		return &s
	}
	return d
}

// Decide implements Decider.
func (d *GoDecider) Decide(states []State, out []Decision) error {
	if d.invalid != nil {
		return d.invalid
	}
	if err := checkDecideArgs(states, out); err != nil {
		return err
	}
	sp := d.scratch.Get().(*[]float32)
	defer d.scratch.Put(sp)
	k := d.mlp.NumMembers()
	fwd, members := (*sp)[:d.mlp.ScratchLen()], (*sp)[d.mlp.ScratchLen():]
	for i := range states {
		d.mlp.ForwardMembers(&states[i], &out[i].Q, members, fwd)
		out[i].settle(members, k, d.meta.Ranges, &states[i])
	}
	return nil
}

// Version implements Decider.
func (d *GoDecider) Version() string { return d.meta.Version }

// Metadata returns the model's metadata.
func (d *GoDecider) Metadata() Metadata { return d.meta }

// MLP returns the network the decider runs.
func (d *GoDecider) MLP() *MLP { return d.mlp }
