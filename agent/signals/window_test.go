package signals

import (
	"math"
	"testing"
	"time"

	"github.com/triage-agent/triage/bpf"
)

func histWith(slot int, n uint64) bpf.Hist {
	var h bpf.Hist
	h.Slots[slot] = n
	return h
}

func TestWindowDeltaCoversOnlyTheSpan(t *testing.T) {
	w := NewWindow(time.Second, 250*time.Millisecond)
	t0 := time.Unix(1000, 0)
	var cum bpf.Hist
	// 2 s of 10 samples per tick in the 1 µs bucket, then 1 s of 10 per
	// tick in the 1 ms bucket: the window must only see the latter.
	for i := 0; i <= 12; i++ {
		if i <= 8 {
			cum.Slots[10] += 10
		} else {
			cum.Slots[20] += 10
		}
		w.Push(t0.Add(time.Duration(i)*250*time.Millisecond), &cum)
	}
	d := w.Delta()
	if d.Slots[10] != 0 || d.Slots[20] != 40 {
		t.Fatalf("window delta: slot10=%d slot20=%d, want 0 and 40", d.Slots[10], d.Slots[20])
	}
	lat := w.Latency()
	if lat.Count != 40 || float64(lat.P99Us) < 1048 || float64(lat.P99Us) >= 2098 {
		t.Fatalf("latency %+v, want 40 samples with p99 in [1048, 2097] µs", lat)
	}
}

func TestWindowEmptyIsUnknown(t *testing.T) {
	w := NewWindow(0, 0)
	if l := w.Latency(); l.P50Us.Known() || l.Count != 0 {
		t.Fatalf("empty window: %+v", l)
	}
	h := histWith(12, 5)
	w.Push(time.Now(), &h)
	if l := w.Latency(); l.P99Us.Known() {
		t.Fatalf("one sample is no interval: %+v", l)
	}
}

func TestWindowSurvivesCounterReset(t *testing.T) {
	w := NewWindow(time.Second, 100*time.Millisecond)
	a, b := histWith(15, 100), histWith(15, 3)
	now := time.Unix(0, 0)
	w.Push(now, &a)
	w.Push(now.Add(100*time.Millisecond), &b) // probe reloaded: counts restart
	if d := w.Delta(); d.Slots[15] != 3 {
		t.Fatalf("after reset delta = %d, want 3", d.Slots[15])
	}
}

func TestQuantileInterpolatesInsideBucket(t *testing.T) {
	h := histWith(10, 100) // all in [1024, 2048) ns
	if q := h.Quantile(0.5); q != 1536 {
		t.Fatalf("p50 = %v, want 1536", q)
	}
	var empty bpf.Hist
	if !math.IsNaN(empty.Quantile(0.5)) {
		t.Fatal("empty histogram quantile is not NaN")
	}
}

// BenchmarkWindowRead is the per-read cost of the windowed percentile:
// one Push of a cumulative histogram and one p50/p99 computation. It must
// report 0 allocs/op.
func BenchmarkWindowRead(b *testing.B) {
	w := NewWindow(time.Second, 100*time.Millisecond)
	var cum bpf.Hist
	now := time.Unix(0, 0)
	b.ReportAllocs()
	var sink Num
	for i := 0; i < b.N; i++ {
		cum.Slots[i%40] += uint64(i)
		now = now.Add(100 * time.Millisecond)
		w.Push(now, &cum)
		l := w.Latency()
		sink += l.P99Us
	}
	_ = sink
}

func TestWindowReadDoesNotAllocate(t *testing.T) {
	w := NewWindow(time.Second, 100*time.Millisecond)
	var cum bpf.Hist
	now := time.Unix(0, 0)
	allocs := testing.AllocsPerRun(200, func() {
		cum.Slots[7]++
		now = now.Add(100 * time.Millisecond)
		w.Push(now, &cum)
		_ = w.Latency()
	})
	if allocs != 0 {
		t.Fatalf("windowed read allocates %.1f times per call", allocs)
	}
}
