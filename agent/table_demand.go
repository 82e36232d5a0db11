package agent

import (
	"math"
	"sync"
	"time"

	"github.com/triage-agent/triage/agent/state"
)

// The demand of the decision tables: which classes clients ask about, and
// which SLAs and expected costs their tasks carry. A table covers what was
// asked lately, so its grid is fine where tasks are and absent elsewhere;
// a task outside it goes to the agent, which adds it to the demand, and
// the next table covers it.
//
// Values are kept for two generations of demandGeneration each: a value
// not asked about for that long leaves the grid (one odd task does not
// stretch a class's cost axis for ever).

const (
	demandGeneration = 10 * time.Second
	// maxDemandClasses bounds the classes remembered; a new class beyond
	// it replaces the one asked about least recently.
	maxDemandClasses = 64
	// maxPoints is how many distinct values an axis keeps exactly (a class
	// with one SLA, or a few); beyond it the axis is log-spaced intervals.
	maxPoints = 8
)

// valueSet is what one generation saw of one axis of one class: up to
// maxPoints distinct positive values exactly, their range, and whether 0
// (no SLA) was seen.
type valueSet struct {
	points   [maxPoints]float32
	n        int
	many     bool // more distinct positive values than maxPoints
	min, max float32
	zero     bool
}

// add records x (0 or positive, finite) and reports whether the set grew.
func (v *valueSet) add(x float32) bool {
	if x == 0 {
		grew := !v.zero
		v.zero = true
		return grew
	}
	grew := false
	if v.n == 0 && !v.many {
		v.min, v.max, grew = x, x, true
	} else if x < v.min || x > v.max {
		v.min, v.max, grew = min(v.min, x), max(v.max, x), true
	}
	if v.many {
		return grew
	}
	for _, p := range v.points[:v.n] {
		if p == x {
			return grew
		}
	}
	if v.n == maxPoints {
		v.many = true
		return true
	}
	v.points[v.n] = x
	v.n++
	return true
}

// union is what both generations saw.
func union(a, b *valueSet) valueSet {
	u := *a
	if b.zero {
		u.zero = true
	}
	if b.many {
		if u.n == 0 && !u.many {
			u.min, u.max = b.min, b.max
		}
		u.many = true
		u.min, u.max = min(u.min, b.min), max(u.max, b.max)
		return u
	}
	for _, p := range b.points[:b.n] {
		u.add(p)
	}
	return u
}

// empty reports whether nothing was seen.
func (v *valueSet) empty() bool { return v.n == 0 && !v.many && !v.zero }

type classDemand struct {
	sla, cost [2]valueSet // [0]: this generation, [1]: the one before
	seen      time.Time   // last asked about
	tasks     uint64      // asked about, this generation and the one before
	recent    uint64      // asked about this generation
}

// demand is the tables' demand. Safe for concurrent use.
type demand struct {
	mu       sync.Mutex
	classes  map[string]*classDemand
	genStart time.Time
	// version changes whenever the grid a table would build from the
	// demand changes: a class or a value appears, or a generation ends.
	version uint64
}

func newDemand(now time.Time) *demand {
	return &demand{classes: map[string]*classDemand{}, genStart: now}
}

// slaValue is the SLA as the tables key it: 0 for none (the agent treats a
// missing, negative or infinite SLA as none), else the value.
func slaValue(ms float32) float32 {
	if !(ms > 0) || math.IsInf(float64(ms), 0) {
		return 0
	}
	return ms
}

// costValue is the expected cost as the tables key it: 0 for unknown.
func costValue(ms float32) float32 { return slaValue(ms) }

// observe records one task asked about at now.
func (d *demand) observe(class string, slaMs, costMs float32, now time.Time) {
	class = state.ClassKey(class)
	sla, cost := slaValue(slaMs), costValue(costMs)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rotate(now)
	c, ok := d.classes[class]
	if !ok {
		if len(d.classes) >= maxDemandClasses {
			d.evictOldest()
		}
		c = &classDemand{}
		d.classes[class] = c
		d.version++
	}
	c.seen = now
	c.tasks++
	c.recent++
	grew := c.sla[0].add(sla)
	if cost > 0 && c.cost[0].add(cost) {
		grew = true
	}
	if grew {
		d.version++
	}
}

// rotate starts a new generation when the current one is over; a class
// asked about in neither is forgotten.
func (d *demand) rotate(now time.Time) {
	if now.Sub(d.genStart) < demandGeneration {
		return
	}
	d.genStart = now
	d.version++
	for name, c := range d.classes {
		if c.recent == 0 {
			delete(d.classes, name)
			continue
		}
		c.sla[1], c.sla[0] = c.sla[0], valueSet{}
		c.cost[1], c.cost[0] = c.cost[0], valueSet{}
		c.tasks, c.recent = c.recent, 0
	}
}

func (d *demand) evictOldest() {
	var oldest string
	var at time.Time
	first := true
	for name, c := range d.classes {
		if first || c.seen.Before(at) {
			oldest, at, first = name, c.seen, false
		}
	}
	delete(d.classes, oldest)
}

// classAxes is one class's demand as the grid is built from it.
type classAxes struct {
	name      string
	sla, cost valueSet
	tasks     uint64
}

// snapshot returns the demand per class (in no order) and its version.
func (d *demand) snapshot(now time.Time, dst []classAxes) ([]classAxes, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rotate(now)
	dst = dst[:0]
	for name, c := range d.classes {
		dst = append(dst, classAxes{name: name, sla: union(&c.sla[0], &c.sla[1]), cost: union(&c.cost[0], &c.cost[1]), tasks: c.tasks})
	}
	return dst, d.version
}
