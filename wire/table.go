package wire

import (
	"errors"
	"fmt"
	"math"
)

// Decision tables (DecisionTable): the bounds a table must keep and the
// rule of its geometry, in one place for the agent that builds them and
// the client that decides from them. docs/local-decisions.md explains the
// grid.

// Bounds of a DecisionTable. A table past any of them is refused whole:
// a client never decides from part of a table.
const (
	MaxTableClasses   = 256     // classes per table
	MaxTableClassName = 128     // bytes of a class name (the agent's class key)
	MaxTableIntervals = 256     // SLA or cost intervals per class
	MaxTableQueueRows = 64      // queue rows
	MaxTableCells     = 1 << 18 // cells over every class
)

// TableNoAnswer is the level of a cell the table does not answer: the
// task goes to the agent.
const TableNoAnswer = 255

// MaxPriority is the highest priority level.
const MaxPriority = 4

// ErrBadTable reports a DecisionTable that breaks its geometry or bounds.
var ErrBadTable = errors.New("wire: bad decision table")

// CheckDecisionTable says why t cannot be decided from, or nil. It checks
// everything a lookup relies on: ascending, disjoint, finite intervals and
// edges, the number of cells of every class, every level 0..4 or
// TableNoAnswer, unique class names, and the bounds above.
func CheckDecisionTable(t *DecisionTable) error {
	if t == nil {
		return fmt.Errorf("%w: no table", ErrBadTable)
	}
	rows := t.GetQueueEdges()
	if len(rows) == 0 || len(rows) > MaxTableQueueRows {
		return fmt.Errorf("%w: %d queue rows, want 1..%d", ErrBadTable, len(rows), MaxTableQueueRows)
	}
	if rows[0] != 0 {
		return fmt.Errorf("%w: first queue edge %v, want 0", ErrBadTable, rows[0])
	}
	for i := 1; i < len(rows); i++ {
		if !finite32(rows[i]) || rows[i] <= rows[i-1] {
			return fmt.Errorf("%w: queue edges not finite and ascending at %d", ErrBadTable, i)
		}
	}
	classes := t.GetClasses()
	if len(classes) > MaxTableClasses {
		return fmt.Errorf("%w: %d classes, at most %d", ErrBadTable, len(classes), MaxTableClasses)
	}
	seen := make(map[string]struct{}, len(classes))
	cells := 0
	for i, c := range classes {
		name := c.GetName()
		if len(name) > MaxTableClassName {
			return fmt.Errorf("%w: class %d: name of %d bytes, at most %d", ErrBadTable, i, len(name), MaxTableClassName)
		}
		if _, dup := seen[name]; dup {
			return fmt.Errorf("%w: class %q twice", ErrBadTable, name)
		}
		seen[name] = struct{}{}
		if err := checkIntervals(c.GetSlaLoMs(), c.GetSlaHiMs(), 1, 0); err != nil {
			return fmt.Errorf("%w: class %q: SLA %w", ErrBadTable, name, err)
		}
		if err := checkIntervals(c.GetCostLoMs(), c.GetCostHiMs(), 0, math.SmallestNonzeroFloat32); err != nil {
			return fmt.Errorf("%w: class %q: cost %w", ErrBadTable, name, err)
		}
		n := ClassCells(c, len(rows))
		if len(c.GetLevels()) != n {
			return fmt.Errorf("%w: class %q: %d levels for %d cells", ErrBadTable, name, len(c.GetLevels()), n)
		}
		for j, l := range c.GetLevels() {
			if l > MaxPriority && l != TableNoAnswer {
				return fmt.Errorf("%w: class %q: cell %d has level %d", ErrBadTable, name, j, l)
			}
		}
		if cells += n; cells > MaxTableCells {
			return fmt.Errorf("%w: more than %d cells", ErrBadTable, MaxTableCells)
		}
	}
	return nil
}

// checkIntervals checks one axis: as many lo as hi, at least min and at
// most MaxTableIntervals of them, each lo ≥ floor and lo < hi, all finite,
// each ending before the next begins.
func checkIntervals(lo, hi []float32, min int, floor float32) error {
	if len(lo) != len(hi) {
		return fmt.Errorf("has %d lower and %d upper bounds", len(lo), len(hi))
	}
	if len(lo) < min || len(lo) > MaxTableIntervals {
		return fmt.Errorf("has %d intervals, want %d..%d", len(lo), min, MaxTableIntervals)
	}
	for i := range lo {
		if !finite32(lo[i]) || !finite32(hi[i]) || lo[i] < floor || lo[i] >= hi[i] {
			return fmt.Errorf("interval %d [%v, %v) is not a finite, non-empty interval from %v up", i, lo[i], hi[i], floor)
		}
		if i > 0 && lo[i] < hi[i-1] {
			return fmt.Errorf("interval %d overlaps or precedes the one before", i)
		}
	}
	return nil
}

// ClassCells is the number of cells of class c in a table of rows queue rows.
func ClassCells(c *TableClass, rows int) int {
	return len(c.GetSlaLoMs()) * (len(c.GetCostLoMs()) + 1) * rows
}

// TableCell is the index of a cell in its class's levels: SLA interval
// sla, cost column cost (0: no cost, 1+i: cost interval i), queue row row,
// for a class of costs cost intervals in a table of rows queue rows.
func TableCell(sla, cost, row, costs, rows int) int {
	return (sla*(costs+1)+cost)*rows + row
}

// FindInterval is the index of the interval [lo[i], hi[i]) that holds x,
// or -1. The intervals must be ascending and disjoint (CheckDecisionTable).
func FindInterval(lo, hi []float32, x float32) int {
	i := atOrBelow(lo, x)
	if i == 0 || !(x < hi[i-1]) {
		return -1
	}
	return i - 1
}

// FindRow is the queue row of a queue of n tasks: the last edge at or
// below n.
func FindRow(edges []float32, n float32) int {
	return max(atOrBelow(edges, n)-1, 0)
}

// atOrBelow is how many of the ascending xs are at or below x, by binary
// search; NaN is below nothing, so none is at or below it.
func atOrBelow(xs []float32, x float32) int {
	i, j := 0, len(xs)
	for i < j {
		h := int(uint(i+j) >> 1)
		if xs[h] <= x {
			i = h + 1
		} else {
			j = h
		}
	}
	return i
}

func finite32(x float32) bool {
	return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
}
