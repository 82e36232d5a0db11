package policy

import (
	"math"
	"math/rand/v2"
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

// The sorted copy answers what counting the window answers, as SLAs come
// and go (with repeats, which the removal must find).
func TestSLAWindowShareMatchesACountOfTheWindow(t *testing.T) {
	var w SLAWindow
	r := rand.New(rand.NewPCG(1, 2))
	var held []float64 // the newest SLAWindowSize added, as the window must hold
	for i := range 5 * SLAWindowSize {
		sla := float64(1 + r.IntN(40)*5) // 1..196 ms, repeats likely
		w.Add(sla)
		held = append(held, sla)
		if len(held) > SLAWindowSize {
			held = held[1:]
		}
		ask := float64(1 + r.IntN(400))
		c := 0
		for _, s := range held {
			if s < ask*TighterRatio {
				c++
			}
		}
		if got, want := w.TighterShare(ask), float64(c)/float64(len(held)); got != want {
			t.Fatalf("after %d adds TighterShare(%v) = %v, a count says %v", i+1, ask, got, want)
		}
	}
}

// BenchmarkSLAWindowTighterShare is one task's share on a full window:
// "sorted" is the window's binary search, "count" the scan of the ring it
// replaced, side by side in one run.
func BenchmarkSLAWindowTighterShare(b *testing.B) {
	var w SLAWindow
	r := rand.New(rand.NewPCG(3, 4))
	for range SLAWindowSize {
		w.Add(float64(1 + r.IntN(500)))
	}
	var sink float64
	b.Run("sorted", func(b *testing.B) {
		for i := range b.N {
			sink += w.TighterShare(float64(1 + i%500))
		}
	})
	b.Run("count", func(b *testing.B) {
		for i := range b.N {
			bound, c := float64(1+i%500)*TighterRatio, 0
			for _, s := range w.ring.all() {
				if s < bound {
					c++
				}
			}
			sink += float64(c) / float64(w.Len())
		}
	})
	if sink < 0 {
		b.Fatal("negative share")
	}
}
