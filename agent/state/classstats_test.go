package state

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// The quantiles are the simulator's (policy.ClassWindow, which train/ keeps too): nearest rank over
// the last 256 samples, recomputed every 16 additions once a class has 16.
func TestClassStatsMatchSimulatorSemantics(t *testing.T) {
	c := NewClassStats(0)
	if p50, p99, mean := c.Stats("x"); !math.IsNaN(p50) || !math.IsNaN(p99) || !math.IsNaN(mean) {
		t.Fatal("an unseen class must be NaN (unknown), not 0")
	}
	for i := 1; i <= 95; i++ { // the last recomputation is at the 95th
		c.Observe("x", float64(i))
	}
	if p50, p99 := c.P50("x"), c.P99("x"); p50 != 48 || p99 != 95 {
		t.Fatalf("after 1..95: p50 %v p99 %v, want 48 95", p50, p99)
	}
	c.Observe("x", 1000) // the 96th: no recomputation until the 111th
	if p99 := c.P99("x"); p99 != 95 {
		t.Fatalf("p99 %v recomputed before 16 additions", p99)
	}
	// 1..1000: recomputed at the 15th and every 16 after, last at the
	// 991st, when the window held 736..991.
	c = NewClassStats(0)
	for i := 1; i <= 1000; i++ {
		c.Observe("batch", float64(i))
	}
	p50, p99, mean := c.Stats("batch")
	if p50 != 863 || p99 != 989 || mean != 863.5 {
		t.Fatalf("window of the last 256: p50 %v p99 %v mean %v, want 863 989 863.5", p50, p99, mean)
	}
}

func TestClassStatsIgnoresBadSamples(t *testing.T) {
	c := NewClassStats(0)
	for _, v := range []float64{math.NaN(), math.Inf(1), -5} {
		c.Observe("x", v)
	}
	if c.Classes() != 0 {
		t.Fatalf("bad samples created %d classes", c.Classes())
	}
	c.Observe("x", 1e12)
	if p := c.P99("x"); p != 1e12 {
		t.Fatalf("huge sample p99 = %v", p)
	}
}

func TestClassStatsBoundsClassCount(t *testing.T) {
	c := NewClassStats(4)
	for i := 0; i < 100; i++ {
		c.Observe("c"+strconv.Itoa(i), 10)
	}
	if n := c.Classes(); n != 4 {
		t.Fatalf("%d classes tracked, want 4", n)
	}
	if p := c.P50("c3"); p != 10 {
		t.Fatalf("a class within the bound: p50 %v", p)
	}
	if p := c.P50("c99"); !math.IsNaN(p) {
		t.Fatalf("a class past the bound has p50 %v, want NaN (neutral feature)", p)
	}
}

func TestClassStatsBoundsClassNameLength(t *testing.T) {
	c := NewClassStats(0)
	long := strings.Repeat("x", 1<<20)
	c.Observe(long, 5)
	if got := ClassKey(long); len(got) != MaxClassBytes {
		t.Fatalf("class key kept at %d bytes", len(got))
	}
	for k := range c.classes {
		if len(k) > MaxClassBytes {
			t.Fatalf("class stored with %d bytes of name", len(k))
		}
	}
	// Names equal in their first MaxClassBytes bytes share one entry.
	if p := c.P50(long[:MaxClassBytes] + "other suffix"); p != 5 {
		t.Fatalf("p50 of the cut name %v", p)
	}
}

func BenchmarkClassStatsObserve(b *testing.B) {
	c := NewClassStats(0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		c.Observe("web", float64(i%1000))
	}
}
