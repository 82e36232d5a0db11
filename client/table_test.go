package client

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/triage-agent/triage/wire"
)

// testTable has one class, "a": SLA points 20 and 200, cost intervals
// [1, 2) and [2, 4), two queue rows (below 3 tasks, 3 and more). Its
// levels are 0..4 in cell order, and 255 (no answer) in the last cell.
func testTable() *wire.DecisionTable {
	c := &wire.TableClass{Name: "a",
		SlaLoMs: []float32{20, 200}, SlaHiMs: []float32{math.Nextafter32(20, 1e9), math.Nextafter32(200, 1e9)},
		CostLoMs: []float32{1, 2}, CostHiMs: []float32{2, 4},
	}
	c.Levels = make([]byte, wire.ClassCells(c, 2))
	for i := range c.Levels {
		c.Levels[i] = byte(i % 5)
	}
	c.Levels[len(c.Levels)-1] = wire.TableNoAnswer
	return &wire.DecisionTable{Epoch: 9, Model: "m", QueueLen: 1, QueueEdges: []float32{0, 3}, Classes: []*wire.TableClass{c},
		State: &wire.NodeState{Epoch: 4}}
}

// newTestClient is a Client with local decisions on and no connection:
// enough to decide from a table handed to it.
func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.LocalDecisions = true
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{cfg: cfg}
	c.local = newLocalDecider(c)
	return c
}

func TestTableLookup(t *testing.T) {
	tb, err := decodeTable(testTable(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		task  *wire.Task
		queue float32
		level uint32
		cell  uint32
		ok    bool
	}{
		{&wire.Task{Class: "a", SlaMs: 20}, 0, 0, 0, true}, // SLA 0, cost unknown, row 0
		{&wire.Task{Class: "a", SlaMs: 20}, 5, 1, 1, true}, // row 1
		{&wire.Task{Class: "a", SlaMs: 20, CostMs: 1.5}, 0, 2, 2, true},
		{&wire.Task{Class: "a", SlaMs: 200, CostMs: 3}, 2, 0, 10, true}, // (1×3+2)×2+0
		{&wire.Task{Class: "a", SlaMs: 200, CostMs: 3}, 3, 0, 0, false}, // the cell without an answer
		{&wire.Task{Class: "a", SlaMs: 21}, 0, 0, 0, false},             // SLA in no interval
		{&wire.Task{Class: "a", SlaMs: 20, CostMs: 4}, 0, 0, 0, false},  // cost in no interval
		{&wire.Task{Class: "b", SlaMs: 20}, 0, 0, 0, false},             // class not listed
		{&wire.Task{Class: "a", SlaMs: float32(math.NaN())}, 0, 0, 0, false},
		{&wire.Task{Class: "a", SlaMs: 20, CostMs: float32(math.Inf(1))}, 0, 0, 0, true}, // an infinite cost is unknown, as in the agent
		{&wire.Task{Class: "a", SlaMs: 20, CostMs: -3}, 1e9, 1, 1, true},
	} {
		level, cell, ok := tb.lookup(c.task, c.queue)
		if ok != c.ok || (ok && (level != c.level || cell != c.cell)) {
			t.Errorf("%v at queue %v: level %d cell %d ok %v, want %d %d %v", c.task, c.queue, level, cell, ok, c.level, c.cell, c.ok)
		}
	}
}

// A malformed table is refused whole and never decided from; the table
// before it stays in force until it is too old.
func TestMalformedTableRefused(t *testing.T) {
	c := newTestClient(t, Config{})
	l := c.local
	l.receive(testTable(), time.Now())
	task := &wire.Task{Id: 1, Class: "a", SlaMs: 20}
	if _, ok := c.DecideLocal(task); !ok {
		t.Fatal("no local decision from a good table")
	}
	for name, spoil := range map[string]func(*wire.DecisionTable){
		"level 7":           func(d *wire.DecisionTable) { d.Classes[0].Levels[0] = 7 },
		"short levels":      func(d *wire.DecisionTable) { d.Classes[0].Levels = d.Classes[0].Levels[:3] },
		"no queue rows":     func(d *wire.DecisionTable) { d.QueueEdges = nil },
		"NaN SLA bound":     func(d *wire.DecisionTable) { d.Classes[0].SlaHiMs[0] = float32(math.NaN()) },
		"overlapping costs": func(d *wire.DecisionTable) { d.Classes[0].CostLoMs[1] = 1.5 },
	} {
		bad := testTable()
		bad.Epoch = 10
		spoil(bad)
		l.receive(bad, time.Now())
		if tb := l.table.Load(); tb.epoch != 9 {
			t.Fatalf("%s: table of epoch %d in force", name, tb.epoch)
		}
		if p, ok := c.DecideLocal(task); !ok || p > 4 {
			t.Fatalf("%s: the good table no longer answers (%d, %v)", name, p, ok)
		}
	}
	if st := c.LocalStats(); st.BadTables != 5 || st.Tables != 1 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := decodeTable(nil, time.Now()); !errors.Is(err, wire.ErrBadTable) {
		t.Fatalf("nil table: %v", err)
	}
}

// A table older than MaxStaleness (its age at the push plus the time since)
// is not decided from.
func TestStaleTableNotDecidedFrom(t *testing.T) {
	c := newTestClient(t, Config{MaxStaleness: 50 * time.Millisecond})
	task := &wire.Task{Id: 1, Class: "a", SlaMs: 20}
	if _, ok := c.DecideLocal(task); ok {
		t.Fatal("decided with no table")
	}
	old := testTable()
	old.AgeUs = 49_000
	c.local.receive(old, time.Now().Add(-2*time.Millisecond))
	if _, ok := c.DecideLocal(task); ok {
		t.Fatal("decided from a table 51 ms old")
	}
	c.local.receive(testTable(), time.Now().Add(-49*time.Millisecond))
	if _, ok := c.DecideLocal(task); !ok {
		t.Fatal("refused a table 49 ms old")
	}
	st := c.LocalStats()
	if st.NoTable != 1 || st.Stale != 1 || st.Local != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// The queue estimate: the table's count, plus what the client decided
// since that the agent has not counted, less outcomes reported since.
func TestQueueEstimate(t *testing.T) {
	c := newTestClient(t, Config{})
	l := c.local
	l.decided.Store(10)
	l.reported.Store(8) // two local decisions not yet taken by the agent
	l.receive(testTable(), time.Now())
	tb := l.table.Load()
	if q := l.queue(tb); q != 1+2 {
		t.Fatalf("at the table: %v, want 3", q)
	}
	l.decided.Add(4)
	l.remote.Add(1)
	l.outcomes.Add(3)
	if q := l.queue(tb); q != 3+4+1-3 {
		t.Fatalf("later: %v, want 5", q)
	}
	l.outcomes.Add(100)
	if q := l.queue(tb); q != 0 {
		t.Fatalf("more outcomes than tasks: %v, want 0", q)
	}
}

// A local decision allocates nothing (its report is queued in a reused
// buffer).
func TestDecideLocalAllocatesNothing(t *testing.T) {
	c := newTestClient(t, Config{MaxStaleness: time.Hour})
	c.local.receive(testTable(), time.Now())
	task := &wire.Task{TaskId: "job", Class: "a", SlaMs: 200, CostMs: 1.5}
	c.local.pending = make([]pendingLocal, 0, 2000)
	if n := testing.AllocsPerRun(1000, func() {
		if _, ok := c.DecideLocal(task); !ok {
			t.Fatal("not decided")
		}
	}); n != 0 {
		t.Fatalf("%v allocations per local decision", n)
	}
}

func TestDurationHist(t *testing.T) {
	var h durationHist
	if h.quantile(0.5) != 0 {
		t.Fatal("empty histogram has a median")
	}
	for i := range 100 {
		h.add(time.Duration(i+1) * time.Millisecond)
	}
	h.add(-time.Second) // a clock that stepped back: bucket 0
	for q, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond} {
		got := h.quantile(q)
		if got < want || float64(got) > 1.2*float64(want) {
			t.Errorf("q%.2f = %v, want %v to 19%% above", q, got, want)
		}
	}
}
