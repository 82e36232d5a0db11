package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// HistSlots is the number of log2 buckets of a kernel latency histogram.
// Slot i counts values in [2^i, 2^(i+1)) ns; slot 0 also holds 0.
const HistSlots = 64

// Hist is a cumulative log2 latency histogram as the kernel programs keep
// it (struct triage_hist in headers/triage_signals.h), summed over CPUs.
type Hist struct {
	Slots [HistSlots]uint64
	SumNs uint64
}

// Count is the number of samples.
func (h *Hist) Count() uint64 {
	var n uint64
	for _, c := range h.Slots {
		n += c
	}
	return n
}

// Add accumulates o into h.
func (h *Hist) Add(o *Hist) {
	for i := range h.Slots {
		h.Slots[i] += o.Slots[i]
	}
	h.SumNs += o.SumNs
}

// Sub stores a - b in h, bucket by bucket; a bucket that went backwards
// (the program was reloaded) counts as a fresh start, so h takes a's value.
func (h *Hist) Sub(a, b *Hist) {
	for i := range h.Slots {
		if a.Slots[i] >= b.Slots[i] {
			h.Slots[i] = a.Slots[i] - b.Slots[i]
		} else {
			h.Slots[i] = a.Slots[i]
		}
	}
	if a.SumNs >= b.SumNs {
		h.SumNs = a.SumNs - b.SumNs
	} else {
		h.SumNs = a.SumNs
	}
}

// Quantile returns the q-quantile (0..1) in nanoseconds, interpolating
// linearly inside the log2 bucket that holds it; NaN when h is empty.
func (h *Hist) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 {
		return nan()
	}
	if q < 0 {
		q = 0
	} else if q > 1 {
		q = 1
	}
	rank := q * float64(n)
	var seen float64
	for i, c := range h.Slots {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			lo, hi := bucketBounds(i)
			frac := (rank - seen) / float64(c)
			return lo + (hi-lo)*frac
		}
		seen += float64(c)
	}
	_, hi := bucketBounds(HistSlots - 1)
	return hi
}

// MeanNs is the exact mean from the kernel's running sum; NaN when empty.
func (h *Hist) MeanNs() float64 {
	n := h.Count()
	if n == 0 {
		return nan()
	}
	return float64(h.SumNs) / float64(n)
}

// bucketBounds is the [lo, hi) range in ns of slot i.
func bucketBounds(i int) (lo, hi float64) {
	if i == 0 {
		return 0, 2
	}
	lo = float64(uint64(1) << uint(i))
	return lo, 2 * lo
}

func nan() float64 { var z float64; return z / z }

// percpuHist reads a per-CPU histogram value into a buffer it keeps, so
// repeated reads do not grow the heap with the CPU count.
type percpuHist struct {
	buf []Hist
}

// openHistProbe opens a probe whose maps hold per-CPU histograms
// (openProbe), with the reader that sums them.
func openHistProbe(name string, load func() (*ebpf.CollectionSpec, error), hooks []hook, want Tier) (*probe, *percpuHist, error) {
	p, buf, err := openPercpuProbe[Hist](name, load, hooks, want)
	if err != nil {
		return nil, nil, err
	}
	return p, &percpuHist{buf: buf}, nil
}

// openPercpuProbe opens a probe (openProbe) with a buffer for one T per
// possible CPU, what a lookup of its per-CPU maps fills; it keeps the
// buffer so that repeated reads do not grow the heap with the CPU count.
// The probe is closed again when the buffer cannot be sized.
func openPercpuProbe[T any](name string, load func() (*ebpf.CollectionSpec, error), hooks []hook, want Tier) (*probe, []T, error) {
	p, err := openProbe(name, load, hooks, want)
	if err != nil {
		return nil, nil, err
	}
	buf, err := percpuBuf[T]()
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	return p, buf, nil
}

// percpuBuf is a buffer for one value per possible CPU, what a lookup of a
// per-CPU map fills.
func percpuBuf[T any]() ([]T, error) {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("counting possible CPUs: %w", err)
	}
	return make([]T, n), nil
}

// read sums the per-CPU values of key in m into dst.
func (p *percpuHist) read(m *ebpf.Map, key any, dst *Hist) error {
	if err := m.Lookup(key, &p.buf); err != nil {
		return err
	}
	p.sum(dst)
	return nil
}

// sum adds up the per-CPU values last read into the buffer.
func (p *percpuHist) sum(dst *Hist) {
	*dst = Hist{}
	for i := range p.buf {
		dst.Add(&p.buf[i])
	}
}
