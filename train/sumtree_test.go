package train

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSumTreeSumsAndFinds(t *testing.T) {
	tr := newSumTree(5) // rounds up to 8 leaves
	ps := []float64{1, 0, 3, 2, 4}
	for i, p := range ps {
		tr.set(i, p)
	}
	if tr.total() != 10 {
		t.Fatalf("total %v, want 10", tr.total())
	}
	// Cumulative intervals: [0,1) → 0, [1,4) → 2, [4,6) → 3, [6,10) → 4.
	for _, c := range []struct {
		u    float64
		want int
	}{{0, 0}, {0.99, 0}, {1, 2}, {3.99, 2}, {4, 3}, {5.5, 3}, {6, 4}, {9.99, 4}} {
		if got := tr.find(c.u); got != c.want {
			t.Errorf("find(%v) = %d, want %d", c.u, got, c.want)
		}
	}
	tr.set(2, 0.5)
	if tr.total() != 7.5 {
		t.Fatalf("total after update %v, want 7.5", tr.total())
	}
}

func TestReplaySamplesByPriority(t *testing.T) {
	r := newReplay(4, 1) // alpha 1: probability proportional to |td|+ε
	for i := 0; i < 4; i++ {
		r.add(Transition{A: uint8(i)})
	}
	for i, td := range []float64{1, 2, 3, 4} {
		r.update(i, td-perEpsilon)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, 4)
	idx := make([]int, 10)
	w := make([]float32, 10)
	const rounds = 4000
	for k := 0; k < rounds; k++ {
		r.sample(rng, 1, idx, w)
		for b, j := range idx {
			counts[j]++
			if w[b] <= 0 || w[b] > 1+1e-6 {
				t.Fatalf("importance weight %v outside (0, 1]", w[b])
			}
		}
	}
	for i, c := range counts {
		want := float64(i+1) / 10
		if got := float64(c) / (rounds * 10); math.Abs(got-want) > 0.02 {
			t.Errorf("transition %d drawn %.3f of the time, want %.3f", i, got, want)
		}
	}
	// With β = 1 the weights undo the sampling bias exactly: w ∝ 1/p.
	r.sample(rng, 1, idx, w)
	for b, j := range idx {
		if want := float32(1) / float32(j+1); math.Abs(float64(w[b]-want)) > 1e-5 {
			t.Errorf("weight of transition %d = %v, want %v", j, w[b], want)
		}
	}
}
