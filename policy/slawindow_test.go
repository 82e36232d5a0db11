package policy

import (
	"math"
	"testing"
)

// The share counts only SLAs under half the task's own, over the last
// SLAWindowSize known ones; unknown SLAs are neither recorded nor answered.
func TestSLAWindowCountsTheTighterShareOfTheRecentTasks(t *testing.T) {
	var w SLAWindow
	if !math.IsNaN(w.TighterShare(200)) {
		t.Fatal("an empty window answered a share")
	}
	for _, sla := range []float64{20, 20, 20, 99, 100, 200, 0, -1, math.NaN(), math.Inf(1)} {
		w.Add(sla)
	}
	if w.Len() != 6 {
		t.Fatalf("window holds %d SLAs, want the 6 known ones", w.Len())
	}
	for _, c := range []struct{ sla, want float64 }{
		{200, 4.0 / 6}, // 20, 20, 20, 99 are under 100; 100 is not
		{40, 0},        // nothing under 20
		{41, 3.0 / 6},
		{1000, 1},
	} {
		if got := w.TighterShare(c.sla); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("TighterShare(%v) = %v, want %v", c.sla, got, c.want)
		}
	}
	for _, bad := range []float64{0, -5, math.NaN(), math.Inf(1)} {
		if !math.IsNaN(w.TighterShare(bad)) {
			t.Errorf("TighterShare(%v) answered for an unknown SLA", bad)
		}
	}
	// The window forgets: after SLAWindowSize loose SLAs the tight ones are gone.
	for range SLAWindowSize {
		w.Add(5000)
	}
	if got := w.TighterShare(200); got != 0 || w.Len() != SLAWindowSize {
		t.Fatalf("after a full window of 5 s SLAs: share %v over %d, want 0 over %d", got, w.Len(), SLAWindowSize)
	}
}
