package policy

import (
	"math"
	"testing"
)

func TestWaitWindowQuantilesAndFading(t *testing.T) {
	var w WaitWindow
	if p50, p99 := w.Stats(0); !math.IsNaN(p50) || !math.IsNaN(p99) {
		t.Fatalf("empty window: %v %v", p50, p99)
	}
	for i := 1; i <= 100; i++ {
		w.Add(1000+float64(i), float64(i))
	}
	if p50, p99 := w.Stats(1100); p50 != 50 || p99 != 99 {
		t.Fatalf("1..100: p50 %v p99 %v, want 50 and 99", p50, p99)
	}
	// Only the newest WaitWindowSize count.
	for i := 0; i < WaitWindowSize; i++ {
		w.Add(1200, 7)
	}
	if p50, p99 := w.Stats(1200); p50 != 7 || p99 != 7 {
		t.Fatalf("after %d sevens: %v %v", WaitWindowSize, p50, p99)
	}
	// A quiet node's statistic fades after WaitWindowMs.
	if p50, _ := w.Stats(1200 + WaitWindowMs + 1); !math.IsNaN(p50) {
		t.Fatalf("%v ms later: p50 %v, want none", WaitWindowMs+1, p50)
	}
	w.Add(5000, -3) // a latency under its service time is no wait
	if p50, _ := w.Stats(5000); p50 != 0 {
		t.Fatalf("negative wait read as %v", p50)
	}
}
