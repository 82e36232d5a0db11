package agent

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/triage-agent/triage/wire"
)

func seen(values ...float32) *valueSet {
	var v valueSet
	for _, x := range values {
		v.add(x)
	}
	return &v
}

// A class's few values are kept exactly (a point interval each, evaluated
// at the value); many values become log-spaced intervals over their range,
// at most maxAxisIntervals, that hold every value seen.
func TestBuildAxis(t *testing.T) {
	ax := buildAxis(seen(200, 20, 0, 20))
	if ax.len() != 3 || ax.rep[0] != 0 || ax.rep[1] != 20 || ax.rep[2] != 200 {
		t.Fatalf("points: %+v", ax)
	}
	for _, x := range []float32{0, 20, 200} {
		if i := wire.FindInterval(ax.lo, ax.hi, x); i < 0 || ax.rep[i] != float64(x) {
			t.Fatalf("%v not in its own point: %d", x, i)
		}
	}
	if i := wire.FindInterval(ax.lo, ax.hi, 21); i >= 0 {
		t.Fatalf("21 found in interval %d of %+v", i, ax)
	}
	var values []float32
	for x := float32(0.3); x < 900; x *= 1.07 {
		values = append(values, x)
	}
	ax = buildAxis(seen(values...))
	if ax.len() == 0 || ax.len() > maxAxisIntervals {
		t.Fatalf("%d intervals over 0.3..900", ax.len())
	}
	for _, x := range values {
		i := wire.FindInterval(ax.lo, ax.hi, x)
		if i < 0 {
			t.Fatalf("%v in no interval of %v..%v", x, ax.lo, ax.hi)
		}
		if r := ax.rep[i]; r < float64(ax.lo[i]) || r >= float64(ax.hi[i]) {
			t.Fatalf("interval %d [%v, %v) evaluated at %v", i, ax.lo[i], ax.hi[i], r)
		}
	}
	narrow := buildAxis(seen(values[:20]...))
	if narrow.len() < 3 {
		t.Fatalf("a range of %v..%v in %d intervals", values[0], values[19], narrow.len())
	}
	// Inner edges sit on one grid of 2^(1/4) steps shared by every class
	// and table, so an axis that moves keeps most of its edges.
	for _, e := range narrow.hi[:narrow.len()-1] {
		k := math.Log2(float64(e)) / axisStepLog2
		if math.Abs(k-math.Round(k)) > 1e-4 {
			t.Fatalf("edge %v is off the grid (step %.4f)", e, k)
		}
	}
}

// Queue rows start at 0, hold at least one whole length each, are evaluated
// inside themselves, and are spaced evenly in feature 0 up to where it is 1.
func TestQueueAxis(t *testing.T) {
	for _, w := range []int{1, 2, 4, 16, 64} {
		edges, reps := queueAxis(w)
		if edges[0] != 0 || len(edges) != len(reps) || len(edges) > wire.MaxTableQueueRows {
			t.Fatalf("%d workers: edges %v reps %v", w, edges, reps)
		}
		f := func(q float64) float64 { return math.Log2(1+q/float64(w)) / math.Log2(65) }
		for r := range edges {
			if r > 0 && edges[r] <= edges[r-1] {
				t.Fatalf("%d workers: edges %v", w, edges)
			}
			if r+1 < len(edges) {
				if reps[r] < float64(edges[r]) || reps[r] > float64(edges[r+1]-1) {
					t.Fatalf("%d workers: row [%v, %v) evaluated at %v", w, edges[r], edges[r+1], reps[r])
				}
				// Rows of one whole length are as fine as a queue goes.
				if gap := f(float64(edges[r+1]-1)) - f(float64(edges[r])); gap > 0.06 {
					t.Fatalf("%d workers: row %d spans %.3f of feature 0", w, r, gap)
				}
			}
		}
		if last := reps[len(reps)-1]; f(last) < 1 {
			t.Fatalf("%d workers: last row evaluated at %v, feature 0 %.3f", w, last, f(last))
		}
	}
}

func TestDemandGenerations(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := newDemand(t0)
	d.observe("a", 20, 2, t0)
	_, v1 := d.snapshot(t0, nil)
	d.observe("a", 20, 2, t0.Add(time.Second))
	if _, v := d.snapshot(t0.Add(time.Second), nil); v != v1 {
		t.Fatal("the same values again changed the demand's version")
	}
	d.observe("a", 20, 3, t0.Add(2*time.Second))
	if _, v := d.snapshot(t0.Add(2*time.Second), nil); v == v1 {
		t.Fatal("a new cost left the version as it was")
	}
	// A generation later "b" appears; two later "a" (not asked since) is gone.
	d.observe("b", 200, 0, t0.Add(demandGeneration+time.Second))
	axes, _ := d.snapshot(t0.Add(demandGeneration+time.Second), nil)
	if len(axes) != 2 {
		t.Fatalf("after one generation: %+v", axes)
	}
	d.observe("b", 200, 0, t0.Add(2*demandGeneration+2*time.Second))
	axes, _ = d.snapshot(t0.Add(2*demandGeneration+2*time.Second), nil)
	if len(axes) != 1 || axes[0].name != "b" || !axes[0].cost.empty() || axes[0].sla.n != 1 || axes[0].sla.points[0] != 200 {
		t.Fatalf("after two generations: %+v", axes)
	}
	for i := range maxDemandClasses + 10 {
		d.observe(fmt.Sprintf("c%d", i), 1, 1, t0.Add(2*demandGeneration+3*time.Second))
	}
	if axes, _ = d.snapshot(t0.Add(2*demandGeneration+3*time.Second), nil); len(axes) != maxDemandClasses {
		t.Fatalf("%d classes remembered, bound %d", len(axes), maxDemandClasses)
	}
}

// The classes asked about most fill the table first; what does not fit
// stays out; cells are numbered class after class in name order.
func TestBuildLayoutBoundsCells(t *testing.T) {
	var demand []classAxes
	for i := range 6 {
		var costs []float32
		for x := float32(1); x < 100; x *= 1.1 {
			costs = append(costs, x)
		}
		demand = append(demand, classAxes{name: fmt.Sprintf("class-%d", i), sla: *seen(20), cost: *seen(costs...), tasks: uint64(10 * (i + 1))})
	}
	full := buildLayout(append([]classAxes(nil), demand...), 1, 4, 1<<20)
	per := full.classes[0].cells
	l := buildLayout(demand, 1, 4, 3*per+per/2)
	if len(l.classes) != 3 || l.cells != 3*per {
		t.Fatalf("%d classes, %d cells; want 3 of %d", len(l.classes), l.cells, per)
	}
	for i, want := range []string{"class-3", "class-4", "class-5"} {
		if c := l.classes[i]; c.name != want || c.offset != i*per {
			t.Fatalf("class %d: %s at %d, want %s at %d", i, c.name, c.offset, want, i*per)
		}
	}
	if l.classOf(0) != 0 || l.classOf(per) != 1 || l.classOf(3*per-1) != 2 || l.classOf(3*per) != -1 || l.classOf(-1) != -1 {
		t.Fatal("classOf does not follow the offsets")
	}
	// The same demand under another version is the same grid; another
	// worker count or one more class is not.
	if !buildLayout(append([]classAxes(nil), demand...), 2, 4, 3*per+per/2).sameGrid(l) {
		t.Fatal("the same demand built a different grid")
	}
	if buildLayout(append([]classAxes(nil), demand...), 1, 8, 3*per+per/2).sameGrid(l) || full.sameGrid(l) {
		t.Fatal("different grids compare equal")
	}
}
