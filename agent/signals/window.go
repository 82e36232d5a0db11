package signals

import (
	"time"

	"github.com/triage-agent/triage/bpf"
)

// DefaultWindow is the span percentiles are computed over.
const DefaultWindow = time.Second

// Window turns a cumulative log2 histogram, sampled periodically, into the
// histogram of the last span: the latest sample minus the newest sample at
// least span older (or the oldest one held). It keeps a fixed ring of
// samples, so Push and Quantiles never allocate.
type Window struct {
	ring  timedRing[bpf.Hist]
	delta bpf.Hist
	dirty bool
}

// NewWindow holds enough samples for span at the given sampling interval
// (span/interval + 2, at least 3).
func NewWindow(span, interval time.Duration) *Window {
	if span <= 0 {
		span = DefaultWindow
	}
	n := 3
	if interval > 0 {
		if k := int(span/interval) + 2; k > n {
			n = k
		}
	}
	if n > 1024 { // a sub-millisecond interval would not be sampled anyway
		n = 1024
	}
	return &Window{ring: newTimedRing[bpf.Hist](span, n)}
}

// Push records a cumulative histogram read at time at.
func (w *Window) Push(at time.Time, cum *bpf.Hist) {
	w.ring.push(at, cum)
	w.dirty = true
}

// Reset forgets every sample (a probe was swapped for another source).
func (w *Window) Reset() { w.ring.reset(); w.dirty = false; w.delta = bpf.Hist{} }

// Delta is the histogram of the window; empty until two samples exist.
// The pointer stays valid until the next Push.
func (w *Window) Delta() *bpf.Hist {
	if !w.dirty {
		return &w.delta
	}
	w.dirty = false
	newest, base, _, ok := w.ring.ends()
	if !ok {
		w.delta = bpf.Hist{}
		return &w.delta
	}
	w.delta.Sub(newest, base)
	return &w.delta
}

// Latency is p50 and p99 of the window in microseconds, and its sample
// count; unknown (NaN) when the window holds no samples.
func (w *Window) Latency() Latency {
	d := w.Delta()
	n := d.Count()
	if n == 0 {
		return Latency{P50Us: unknown, P99Us: unknown}
	}
	return Latency{P50Us: Num(d.Quantile(0.5) / 1e3), P99Us: Num(d.Quantile(0.99) / 1e3), Count: n}
}

// Latency is a windowed latency distribution summary.
type Latency struct {
	P50Us Num    `json:"p50"`
	P99Us Num    `json:"p99"`
	Count uint64 `json:"count"`
}

// unknownLatency is the value of a latency without a source.
var unknownLatency = Latency{P50Us: unknown, P99Us: unknown}
