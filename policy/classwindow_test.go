package policy

import (
	"math"
	"testing"
)

func TestClassWindowNearestRankOverLast256(t *testing.T) {
	var w ClassWindow
	if p50, p99, mean := w.Stats(); !math.IsNaN(p50) || !math.IsNaN(p99) || !math.IsNaN(mean) {
		t.Fatalf("empty window: %v %v %v, want NaN", p50, p99, mean)
	}
	for i := 1; i <= 95; i++ {
		w.Add(float64(i))
	}
	// Recomputed on each of the first 15 additions, then every 16th: at
	// additions 31, 47, 63, 79, 95, ... (15 + 16k). At 95 it reads 1..95:
	// nearest rank 48 for p50 and 95 for p99.
	if p50, p99, _ := w.Stats(); p50 != 48 || p99 != 95 {
		t.Fatalf("after 1..95: p50 %v p99 %v, want 48 and 95", p50, p99)
	}
	for i := 96; i <= 1000; i++ {
		w.Add(float64(i))
	}
	// The last recomputation was at addition 991 (15 + 16·61), over the
	// last 256 values then, 736..991: p50 rank 128, p99 rank 254.
	if w.Len() != ClassWindowSize {
		t.Fatalf("window holds %d, want %d", w.Len(), ClassWindowSize)
	}
	if p50, p99, mean := w.Stats(); p50 != 863 || p99 != 989 || mean != 863.5 {
		t.Errorf("after 1..1000: p50 %v p99 %v mean %v, want 863, 989, 863.5", p50, p99, mean)
	}
}

func TestNearestRank(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.25, 1}, {0.5, 2}, {0.99, 4}, {1, 4}} {
		if got := NearestRank(xs, c.q); got != c.want {
			t.Errorf("q %v: %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(NearestRank(nil, 0.5)) {
		t.Error("empty input should give NaN")
	}
}
