package agent

import (
	"cmp"
	"math"
	"slices"
)

// The grid of a decision table (docs/local-decisions.md): per class, an
// SLA axis and an expected-cost axis built from the demand, and one queue
// axis for every class. Each interval of an axis is evaluated at one
// representative value: the value itself where the axis keeps values
// exactly, else the interval's geometric middle.

const (
	// axisStepLog2 is log2 of the ratio of a log-spaced interval: 2^(1/4),
	// about 19%, aligned on a grid shared by every class and every table,
	// so that an axis that grows keeps its old edges (and its table's
	// deltas stay small).
	axisStepLog2 = 0.25
	// maxAxisIntervals caps a log-spaced axis; a wider range merges
	// neighbouring steps.
	maxAxisIntervals = 24
	// axisMarginLog2 widens a log-spaced axis beyond the range seen, by a
	// factor of 2 each way: a lognormal cost keeps setting new extremes
	// for a while, and each one outside the table would go to the agent.
	axisMarginLog2 = 1.0
	// queueRowPoints is how many queue lengths, evenly spaced in feature 0
	// (log2(1 + tasks per worker)), the queue axis starts from before rows
	// that hold no whole number of tasks are merged away.
	queueRowPoints = 20
)

// tableAxis is one axis: intervals [lo[i], hi[i]) and the value each is
// evaluated at.
type tableAxis struct {
	lo, hi []float32
	rep    []float64
}

func (ax *tableAxis) add(lo, hi float32, rep float64) {
	ax.lo, ax.hi, ax.rep = append(ax.lo, lo), append(ax.hi, hi), append(ax.rep, rep)
}

func (ax *tableAxis) len() int { return len(ax.lo) }

// buildAxis is the axis of what v saw: a point interval for 0 when it was
// seen, then a point interval per value while there are at most maxPoints
// of them, else log-spaced intervals over their range widened by
// axisMarginLog2 each way.
func buildAxis(v *valueSet) tableAxis {
	var ax tableAxis
	if v.zero {
		ax.add(0, math.Nextafter32(0, 1), 0)
	}
	switch {
	case v.many:
		k0 := math.Floor((math.Log2(float64(v.min)) - axisMarginLog2) / axisStepLog2)
		k1 := math.Floor((math.Log2(float64(v.max)) + axisMarginLog2) / axisStepLog2)
		steps := int(k1-k0) + 1
		merge := (steps + maxAxisIntervals - 1) / maxAxisIntervals
		edge := func(k int) float32 { return float32(math.Exp2((k0 + float64(k)) * axisStepLog2)) }
		for k := 0; k < steps; k += merge {
			lo, hi := edge(k), edge(k+merge)

			ax.add(lo, hi, math.Sqrt(float64(lo)*float64(hi)))
		}
	case v.n > 0:
		pts := slices.Clone(v.points[:v.n])
		slices.Sort(pts)
		for _, p := range pts {
			ax.add(p, math.Nextafter32(p, float32(math.Inf(1))), float64(p))
		}
	}
	return ax
}

// queueAxis is the queue rows for a node of workers worker slots: row r
// holds queue lengths [edges[r], edges[r+1]) (the last row is open above)
// and is evaluated at reps[r], the length in its middle as feature 0 reads
// it. Rows are spaced evenly in feature 0 from 0 to 64 tasks per worker,
// where feature 0 reaches 1.
func queueAxis(workers int) (edges []float32, reps []float64) {
	w := float64(max(workers, 1))
	top := float64(queueRange) * w
	scale := math.Log2(1 + queueRange)
	f := func(q float64) float64 { return math.Log2(1+q/w) / scale }
	q := func(f float64) float64 { return w * (math.Exp2(f*scale) - 1) }
	edges = []float32{0}
	for k := 1; k < queueRowPoints; k++ {
		e := float32(math.Ceil(q((float64(k) - 0.5) / (queueRowPoints - 1))))
		if e > edges[len(edges)-1] {
			edges = append(edges, e)
		}
	}
	for r := range edges {
		lo := float64(edges[r])
		if r == len(edges)-1 {
			reps = append(reps, math.Max(lo, top))
			break
		}
		hi := float64(edges[r+1]) - 1 // the last whole length in the row
		reps = append(reps, math.Min(math.Max(q((f(lo)+f(hi))/2), lo), hi))
	}
	return edges, reps
}

// queueRange is where feature 0 reaches 1: 64 tasks per worker
// (policy.Vector's scale).
const queueRange = 64

// tableLayout is the grid of one table: which classes, their axes, the
// queue rows, and where each class's cells start.
type tableLayout struct {
	version    uint64 // the demand version it was built from
	queueEdges []float32
	queueReps  []float64
	classes    []layoutClass
	cells      int
}

type layoutClass struct {
	name      string
	sla, cost tableAxis
	offset    int // its first cell in the table's numbering
	cells     int
}

// buildLayout lays out the classes of demand, the most asked about first,
// while they fit maxCells; the rest stay out of the table (their tasks go
// to the agent). The classes are then ordered by name, so that a table's
// bytes move little when the demand does.
func buildLayout(demand []classAxes, version uint64, workers, maxCells int) *tableLayout {
	l := &tableLayout{version: version}
	l.queueEdges, l.queueReps = queueAxis(workers)
	slices.SortFunc(demand, func(a, b classAxes) int {
		if c := cmp.Compare(b.tasks, a.tasks); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	for i := range demand {
		c := layoutClass{name: demand[i].name, sla: buildAxis(&demand[i].sla), cost: buildAxis(&demand[i].cost)}
		if c.sla.len() == 0 {
			continue
		}
		c.cells = c.sla.len() * (c.cost.len() + 1) * len(l.queueEdges)
		if l.cells+c.cells > maxCells {
			continue
		}
		l.cells += c.cells
		l.classes = append(l.classes, c)
	}
	slices.SortFunc(l.classes, func(a, b layoutClass) int { return cmp.Compare(a.name, b.name) })
	off := 0
	for i := range l.classes {
		l.classes[i].offset = off
		off += l.classes[i].cells
	}
	return l
}

// classOf is the index of the class that holds global cell i, or -1.
func (l *tableLayout) classOf(i int) int {
	k, found := slices.BinarySearchFunc(l.classes, i, func(c layoutClass, i int) int {
		switch {
		case i < c.offset:
			return 1
		case i >= c.offset+c.cells:
			return -1
		}
		return 0
	})
	if !found {
		return -1
	}
	return k
}

// sameGrid reports whether l and o have the same classes, axes and queue
// rows (their cells are then the same cells).
func (l *tableLayout) sameGrid(o *tableLayout) bool {
	if l.cells != o.cells || len(l.classes) != len(o.classes) || !slices.Equal(l.queueEdges, o.queueEdges) {
		return false
	}
	for i := range l.classes {
		a, b := &l.classes[i], &o.classes[i]
		if a.name != b.name || !a.sla.equal(&b.sla) || !a.cost.equal(&b.cost) {
			return false
		}
	}
	return true
}

func (ax *tableAxis) equal(o *tableAxis) bool {
	return slices.Equal(ax.lo, o.lo) && slices.Equal(ax.hi, o.hi) && slices.Equal(ax.rep, o.rep)
}
