package client

import (
	"math"
	"time"

	"github.com/triage-agent/triage/wire"
)

// localTable is a DecisionTable as the client decides from it: checked
// whole when it arrives (wire.CheckDecisionTable), its classes in a map,
// and when it arrived. It is never modified after decodeTable.
type localTable struct {
	epoch      uint64
	model      string
	stateEpoch uint64
	queueLen   float32
	edges      []float32
	classes    map[string]*localClass
	// received is when it arrived (monotonic clock), pushAge how old the
	// agent said it was when it sent it: its age is pushAge + time since
	// received.
	received time.Time
	pushAge  time.Duration
	// base is the client's counters when it arrived, for the queue estimate.
	base queueCounts
}

type localClass struct {
	slaLo, slaHi, costLo, costHi []float32
	levels                       []byte
	offset                       uint32 // its first cell in the table's numbering
}

// decodeTable checks t and builds the lookup structure; a table that
// fails any check is refused whole.
func decodeTable(t *wire.DecisionTable, received time.Time) (*localTable, error) {
	if err := wire.CheckDecisionTable(t); err != nil {
		return nil, err
	}
	lt := &localTable{
		epoch: t.GetEpoch(), model: t.GetModel(), stateEpoch: t.GetState().GetEpoch(), queueLen: float32(t.GetQueueLen()),
		edges: t.GetQueueEdges(), classes: make(map[string]*localClass, len(t.GetClasses())),
		received: received, pushAge: time.Duration(t.GetAgeUs()) * time.Microsecond,
	}
	off := 0
	for _, c := range t.GetClasses() {
		lt.classes[c.GetName()] = &localClass{
			slaLo: c.GetSlaLoMs(), slaHi: c.GetSlaHiMs(), costLo: c.GetCostLoMs(), costHi: c.GetCostHiMs(),
			levels: c.GetLevels(), offset: uint32(off),
		}
		off += len(c.GetLevels()) // at most wire.MaxTableCells in all
	}
	return lt, nil
}

// age is how old the table is at now.
func (t *localTable) age(now time.Time) time.Duration { return t.pushAge + now.Sub(t.received) }

// tableValue is an SLA or expected cost as tables key it: 0 for none or
// unknown (what the agent makes of a missing, negative, NaN or infinite
// value), else the value.
func tableValue(ms float32) float32 {
	if !(ms > 0) || math.IsInf(float64(ms), 0) {
		return 0
	}
	return ms
}

// lookup is the level of task in this table with queue tasks in flight and
// its cell, or ok false when the table does not answer it (class not
// listed, SLA or cost in no interval, a cell without an answer). It never
// returns a level outside 0..4, whatever the table holds.
func (t *localTable) lookup(task *wire.Task, queue float32) (level uint32, cell uint32, ok bool) {
	c := t.classes[task.GetClass()]
	if c == nil {
		return 0, 0, false
	}
	s := wire.FindInterval(c.slaLo, c.slaHi, tableValue(task.GetSlaMs()))
	if s < 0 {
		return 0, 0, false
	}
	k := 0
	if cost := tableValue(task.GetCostMs()); cost > 0 {
		if k = wire.FindInterval(c.costLo, c.costHi, cost) + 1; k == 0 {
			return 0, 0, false
		}
	}
	i := wire.TableCell(s, k, wire.FindRow(t.edges, queue), len(c.costLo), len(t.edges))
	if i < 0 || i >= len(c.levels) || c.levels[i] > wire.MaxPriority {
		return 0, 0, false
	}
	return uint32(c.levels[i]), c.offset + uint32(i), true
}
