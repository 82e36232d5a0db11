package policy

import (
	"fmt"
	"math/bits"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// ioTensors is one set of input and output tensors of a fixed batch size,
// with the Value slices Run takes, so a call allocates nothing of its own.
// members is the ensemble's second output (nil for a plain network).
type ioTensors struct {
	n       int
	in, out *ort.Tensor[float32]
	members *ort.Tensor[float32]
	inputs  []ort.Value
	outputs []ort.Value
}

// batchClass is the batch size ORT runs n states with: n rounded up to
// 1, 2, 3, 4, 6, 8, 12, 16, ... (powers of two and the halfway steps), at
// most half again as many rows. ONNX Runtime keeps memory for every input
// shape it has run (about 80 KiB each for the default model, not given
// back): the batcher's batches take any size up to its max, and running
// them as they come grew the process by 43 MiB over sizes 1 to 512,
// against 1 MiB over the 19 classes. The pool below keeps tensors per
// class for the same reason.
func batchClass(n int) int {
	if n <= 4 {
		return max(n, 1)
	}
	p := 1 << (bits.Len(uint(n-1)) - 1) // largest power of two below n
	if half := p + p/2; n <= half {
		return half
	}
	return 2 * p
}

// tensorPool keeps idle tensor sets by batch size. Tensors own C memory, so
// the pool is an explicit free list (sync.Pool would drop them without
// Destroy) bounded per size and in total. members is the model's ensemble
// size: above 1, each set has the [n, NumActions*members] output too.
type tensorPool struct {
	members int
	mu      sync.Mutex
	free    map[int][]*ioTensors
	total   int
}

const (
	maxIdlePerSize = 8   // about the concurrency one node's callers reach
	maxIdleTotal   = 256 // caps the memory kept for rare batch sizes
)

func (p *tensorPool) get(n int) (*ioTensors, error) {
	p.mu.Lock()
	if l := p.free[n]; len(l) > 0 {
		io := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		p.total--
		p.mu.Unlock()
		return io, nil
	}
	p.mu.Unlock()
	in, err := ort.NewEmptyTensor[float32](ort.NewShape(int64(n), NumFeatures))
	if err != nil {
		return nil, fmt.Errorf("creating input tensor for %d states: %w", n, err)
	}
	out, err := ort.NewEmptyTensor[float32](ort.NewShape(int64(n), NumActions))
	if err != nil {
		in.Destroy()
		return nil, fmt.Errorf("creating output tensor for %d states: %w", n, err)
	}
	io := &ioTensors{n: n, in: in, out: out, inputs: []ort.Value{in}, outputs: []ort.Value{out}}
	if p.members > 1 {
		if io.members, err = ort.NewEmptyTensor[float32](ort.NewShape(int64(n), int64(NumActions*p.members))); err != nil {
			io.destroy()
			return nil, fmt.Errorf("creating the members' output tensor for %d states: %w", n, err)
		}
		io.outputs = append(io.outputs, io.members)
	}
	return io, nil
}

func (p *tensorPool) put(io *ioTensors) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[int][]*ioTensors{}
	}
	if len(p.free[io.n]) >= maxIdlePerSize || p.total >= maxIdleTotal {
		io.destroy()
		return
	}
	p.free[io.n] = append(p.free[io.n], io)
	p.total++
}

func (p *tensorPool) destroy() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.free {
		for _, io := range l {
			io.destroy()
		}
	}
	p.free, p.total = nil, 0
}

func (io *ioTensors) destroy() {
	io.in.Destroy()
	io.out.Destroy()
	if io.members != nil {
		io.members.Destroy()
	}
}
