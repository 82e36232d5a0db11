package agent

import (
	"bytes"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/wire"
)

// The decision tables (docs/local-decisions.md): the agent's policy, the
// guard included, evaluated over a grid of the per-task inputs for the node
// as it is now, pushed to clients that decide locally from it. The agent
// implements serve.TableBackend: Table is polled by every table
// subscription and brings the table up to date at most every
// TableInterval; ReportLocal (table_local.go) takes the decisions made
// from it.
//
// Bringing a table up to date recomputes every cell's state vector when
// the node snapshot has moved on since the last time (each StateInterval,
// 100 ms by default) and evaluates the model only on the cells whose state
// moved by more than tableTolerance in some feature since their last
// evaluation, or on every cell when the grid or the model changed. Between
// two snapshots the states stay as they were: the node inputs are the
// snapshot's, and what else feeds a cell (the class's latency quantiles,
// the work in flight per level) is as smooth as the snapshot. Recomputing
// them at every TableInterval cost two thirds of the agent's CPU under
// load (docs/footprint.md) and changed few decisions. The guard is applied
// to every cell each time (a controller's verdict can change while the
// states do not). A table whose cells' states and levels are all
// unchanged keeps its epoch; anything else is a new epoch.

const (
	// DefaultTableInterval is how often a subscribed table is brought up
	// to date.
	DefaultTableInterval = 10 * time.Millisecond
	// DefaultTableMaxCells bounds the cells of a table.
	DefaultTableMaxCells = 4096
	// tableTolerance is how far a cell's state may move, in every feature
	// (each in [0, 1]), before its decision is evaluated again: below the
	// noise of the kernel signals between two snapshots.
	tableTolerance = 1.0 / 256
	// tableRetain is how many recent tables keep their cells, so that a
	// local decision reported a little late finds the state it was made
	// from.
	tableRetain = 8
)

// builtTable is one epoch of the table: the grid and, per cell, the state
// its decision was evaluated on and the network's decision.
type builtTable struct {
	epoch  uint64
	model  string
	layout *tableLayout
	states []policy.State
	dec    []policy.Decision
	levels []byte
}

// publishedTable is what Table returns until the next refresh.
type publishedTable struct {
	msg   *wire.DecisionTable
	at    time.Time
	epoch uint64
}

type tableProducer struct {
	a        *Agent
	interval time.Duration
	maxCells int
	demand   *demand
	m        *tableMetrics
	pub      atomic.Pointer[publishedTable]
	errLog   atomic.Int64

	mu           sync.Mutex // serialises refresh; guards what follows
	layout       *tableLayout
	axes         []classAxes
	next         []policy.State
	ctl          []control.Task // per (class, SLA, cost) of the layout
	changed      []int
	evalIn       []policy.State
	evalOut      []policy.Decision
	nextDec      []policy.Decision
	levelScratch []byte
	comp         [policy.NumActions]float64 // expected work in flight per task, per level, last known
	statesOf     *nodeSnapshot              // the snapshot the newest table's states were computed from
	nextEpoch    uint64

	ringMu sync.RWMutex
	ring   [tableRetain]*builtTable
	head   int // ring[head] is the newest
}

func newTableProducer(a *Agent, interval time.Duration, maxCells int) *tableProducer {
	now := time.Now()
	p := &tableProducer{
		a: a, interval: interval, maxCells: maxCells, demand: newDemand(now),
		// Epochs start at the clock so that they never repeat across
		// restarts: a decision reported against an old agent's table is
		// not read against a new one's.
		nextEpoch: uint64(now.UnixNano()),
	}
	p.m = newTableMetrics(p)
	return p
}

// Table implements serve.TableBackend.
func (p *tableProducer) Table() (*wire.DecisionTable, time.Time) {
	now := time.Now()
	due := func() bool {
		pub := p.pub.Load()
		return pub == nil || now.Sub(pub.at) >= p.interval*9/10
	}
	if due() {
		p.mu.Lock()
		if due() { // another subscriber may have just done it
			start := time.Now()
			if err := p.refresh(now); err != nil {
				p.m.refreshes.WithLabelValues("failed").Inc()
				if last := p.errLog.Load(); now.UnixNano()-last > int64(time.Minute) && p.errLog.CompareAndSwap(last, now.UnixNano()) {
					p.a.log.Error("decision table not brought up to date; clients fall back to remote decisions as it ages", "err", err)
				}
			}
			p.m.refreshTime.Observe(time.Since(start).Seconds())
		}
		p.mu.Unlock()
	}
	pub := p.pub.Load()
	if pub == nil {
		return nil, time.Time{}
	}
	return pub.msg, pub.at
}

// observe records a task asked about. It is recorded whether or not a
// table is subscribed to (a mutex and a map lookup): the first tasks of a
// client that subscribes go to the agent before its first table, and they
// are what that table must cover.
func (p *tableProducer) observe(d *state.Descriptor, now time.Time) {
	p.demand.observe(d.Class, float32(d.SLAMs), float32(d.CostMs), now)
}

// newest is the latest table (nil before the first).
func (p *tableProducer) newest() *builtTable {
	p.ringMu.RLock()
	defer p.ringMu.RUnlock()
	return p.ring[p.head]
}

// refresh brings the table up to date at now. Called under p.mu.
func (p *tableProducer) refresh(now time.Time) error {
	a := p.a
	node := a.node.Load()
	qlen, work := a.tracker.load()
	model := a.model.Version()
	var version uint64
	p.axes, version = p.demand.snapshot(now, p.axes[:0])
	if p.layout == nil || p.layout.version != version {
		// A new generation of the demand, or a value seen again in it,
		// moves the version without changing the grid: keep the grid
		// then, and with it every cell's decision.
		l := buildLayout(p.axes, version, a.asm.Workers(), p.maxCells)
		if p.layout != nil && l.sameGrid(p.layout) {
			p.layout.version = version
		} else {
			p.layout = l
		}
	}
	l := p.layout
	if qlen > 0 {
		for i := range work {
			p.comp[i] = work[i] / float64(qlen)
		}
	}
	prev := p.newest()
	full := prev == nil || prev.layout != l || prev.model != model
	p.changed = p.changed[:0]
	if full || node != p.statesOf {
		p.cellStates(l, node, now)
		p.statesOf = node
		for i := range p.next {
			if full || moved(&p.next[i], &prev.states[i]) {
				p.changed = append(p.changed, i)
			}
		}
	} else {
		p.controlTasks(l, node, now)
	}
	var dec []policy.Decision
	switch {
	case len(p.changed) > 0:
		if err := p.evaluate(prev, full); err != nil {
			return err
		}
		dec = p.nextDec
	case !full:
		dec = prev.dec
	}
	p.levelScratch = p.levels(p.levelScratch, l, dec)
	if !full && len(p.changed) == 0 && bytes.Equal(p.levelScratch, prev.levels) {
		p.m.refreshes.WithLabelValues("current").Inc()
		p.publish(prev, qlen, node.wire, now, false)
		return nil
	}
	b := p.store(l, model, bytes.Clone(p.levelScratch), prev, dec)
	p.m.refreshes.WithLabelValues("rebuilt").Inc()
	p.publish(b, qlen, node.wire, now, true)
	return nil
}

// cellStates fills p.next with every cell's state at now and p.ctl with
// each (class, SLA, cost)'s task as the guard's controller sees it.
func (p *tableProducer) cellStates(l *tableLayout, node *nodeSnapshot, now time.Time) {
	if cap(p.next) < l.cells {
		p.next = make([]policy.State, l.cells)
	}
	p.next = p.next[:l.cells]
	rows := len(l.queueEdges)
	p.eachTask(l, node, now, func(c *layoutClass, s, k int, in *policy.Inputs) {
		base := c.offset + wire.TableCell(s, k, 0, c.cost.len(), rows)
		// The rows of a (class, SLA, cost) differ in the queue alone: the
		// rest of the state is computed once, the queue's part per row.
		st := policy.Vector(in)
		for r, q := range l.queueReps {
			in.QueueLen = q
			for lv := range in.InFlightMs {
				in.InFlightMs[lv] = p.comp[lv] * q
			}
			st.SetQueue(in)
			p.next[base+r] = st
		}
	})
}

// controlTasks fills p.ctl alone, for a refresh that keeps the states.
func (p *tableProducer) controlTasks(l *tableLayout, node *nodeSnapshot, now time.Time) {
	p.eachTask(l, node, now, nil)
}

// eachTask sets p.ctl to each (class, SLA, cost)'s task as the guard's
// controller sees it at now, calling cell (when not nil) with the task's
// inputs on node.
func (p *tableProducer) eachTask(l *tableLayout, node *nodeSnapshot, now time.Time, cell func(c *layoutClass, s, k int, in *policy.Inputs)) {
	a := p.a
	p.ctl = p.ctl[:0]
	for ci := range l.classes {
		c := &l.classes[ci]
		for s := range c.sla.len() {
			for k := range c.cost.len() + 1 {
				d := state.Descriptor{Class: c.name, SLAMs: c.sla.rep[s]}
				if k > 0 {
					d.CostMs = c.cost.rep[k-1]
				}
				in := a.asm.TaskInputs(&node.inputs, &d, 0, now)
				p.ctl = append(p.ctl, a.controlTask(&d, knownOrZero(in.CostMs), now))
				if cell != nil {
					cell(c, s, k, &in)
				}
			}
		}
	}
}

// moved reports whether a cell's state moved past the tolerance.
func moved(a, b *policy.State) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tableTolerance {
			return true
		}
	}
	return false
}

// evaluate runs the model on the changed cells and fills p.nextDec with
// every cell's decision (the previous table's for the others).
func (p *tableProducer) evaluate(prev *builtTable, full bool) error {
	n := len(p.changed)
	if cap(p.evalIn) < n {
		p.evalIn, p.evalOut = make([]policy.State, n), make([]policy.Decision, n)
	}
	in, out := p.evalIn[:n], p.evalOut[:n]
	for j, i := range p.changed {
		in[j] = p.next[i]
	}
	if err := p.a.model.Decide(in, out); err != nil {
		return fmt.Errorf("evaluating %d cells: %w", n, err)
	}
	p.m.evaluated.Add(float64(n))
	if cap(p.nextDec) < len(p.next) {
		p.nextDec = make([]policy.Decision, len(p.next))
	}
	p.nextDec = p.nextDec[:len(p.next)]
	if !full {
		copy(p.nextDec, prev.dec)
	}
	for j, i := range p.changed {
		p.nextDec[i] = out[j]
	}
	return nil
}

// levels is every cell's level: the guard's answer for a task in the cell
// arriving now (the network's priority where it is sure, the controller's
// where not, TableNoAnswer where the controller cannot preview).
func (p *tableProducer) levels(levels []byte, l *tableLayout, dec []policy.Decision) []byte {
	g := p.a.guard
	if cap(levels) < len(dec) {
		levels = make([]byte, len(dec))
	}
	levels = levels[:len(dec)]
	rows := len(l.queueEdges)
	for i := range dec {
		if g == nil {
			levels[i] = byte(dec[i].Priority)
			continue
		}
		combo := i / rows // cells of one (class, SLA, cost) are rows consecutive cells
		level, _, ok := g.Preview(&p.ctl[combo], &dec[i])
		if !ok {
			levels[i] = wire.TableNoAnswer
			continue
		}
		levels[i] = byte(level)
	}
	return levels
}

// store makes the new epoch the newest table, reusing the oldest slot's
// arrays. Unchanged cells keep the state their decision was evaluated on.
func (p *tableProducer) store(l *tableLayout, model string, levels []byte, prev *builtTable, dec []policy.Decision) *builtTable {
	p.ringMu.Lock()
	defer p.ringMu.Unlock()
	slot := (p.head + 1) % tableRetain
	b := p.ring[slot]
	if b == nil || b == prev {
		b = &builtTable{}
	}
	n := len(p.next)
	if cap(b.states) < n {
		b.states = make([]policy.State, n)
	}
	b.states = b.states[:n]
	if prev != nil && prev.layout == l && len(p.changed) < n {
		copy(b.states, prev.states)
		for _, i := range p.changed {
			b.states[i] = p.next[i]
		}
	} else {
		copy(b.states, p.next)
	}
	if cap(b.dec) < n {
		b.dec = make([]policy.Decision, n)
	}
	b.dec = b.dec[:n]
	copy(b.dec, dec)
	b.epoch, b.model, b.layout, b.levels = p.nextEpoch, model, l, levels
	p.nextEpoch++
	p.ring[slot], p.head = b, slot
	return b
}

// publish makes b what Table returns, up to date at now.
func (p *tableProducer) publish(b *builtTable, qlen int, node *wire.NodeState, now time.Time, rebuilt bool) {
	var classes []*wire.TableClass
	if old := p.pub.Load(); !rebuilt && old != nil && old.epoch == b.epoch {
		classes = old.msg.GetClasses()
	} else {
		classes = make([]*wire.TableClass, len(b.layout.classes))
		for i := range b.layout.classes {
			c := &b.layout.classes[i]
			classes[i] = &wire.TableClass{
				Name: c.name, SlaLoMs: c.sla.lo, SlaHiMs: c.sla.hi, CostLoMs: c.cost.lo, CostHiMs: c.cost.hi,
				Levels: b.levels[c.offset : c.offset+c.cells],
			}
		}
	}
	msg := &wire.DecisionTable{
		Epoch: b.epoch, Model: b.model, QueueLen: uint32(min(qlen, math.MaxUint32)),
		QueueEdges: b.layout.queueEdges, Classes: classes, State: node,
	}
	p.pub.Store(&publishedTable{msg: msg, at: now, epoch: b.epoch})
}

// localCell is what a reported local decision was made from.
type localCell struct {
	state policy.State
	dec   policy.Decision
	model string
}

// cell returns cell i of the table of epoch for a task of class, if that
// table is still retained and the cell is the class's.
func (p *tableProducer) cell(epoch uint64, i uint32, class string) (localCell, bool) {
	p.ringMu.RLock()
	defer p.ringMu.RUnlock()
	for _, b := range p.ring {
		if b == nil || b.epoch != epoch {
			continue
		}
		if int64(i) >= int64(len(b.states)) {
			return localCell{}, false
		}
		k := b.layout.classOf(int(i))
		if k < 0 || b.layout.classes[k].name != class {
			return localCell{}, false
		}
		return localCell{state: b.states[i], dec: b.dec[i], model: b.model}, true
	}
	return localCell{}, false
}
