package serve

import (
	"testing"
	"time"

	"github.com/triage-agent/triage/wire"
)

// The push rule, case by case: what the client decides from pushes at
// once, a queue move within its row and a re-dating wait for the
// heartbeat, the same refresh is never sent twice, and a subscription
// without a bound gets every refresh.
func TestTablePaceRule(t *testing.T) {
	edges := []float32{0, 1, 2, 4, 8}
	table := func(epoch uint64, model string, state uint64, queue uint32) *wire.DecisionTable {
		return &wire.DecisionTable{Epoch: epoch, Model: model, QueueLen: queue, QueueEdges: edges, State: &wire.NodeState{Epoch: state}}
	}
	sub := &wire.Subscribe{Mode: wire.SubscribeMode_SUBSCRIBE_MODE_TABLE, MaxStalenessMs: 60}
	hb := tableHeartbeat(sub)
	if hb != 20*time.Millisecond {
		t.Fatalf("heartbeat for a 60 ms bound %v, want 20ms", hb)
	}
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	base := table(7, "m1", 3, 4) // queue 4: row 3 (4 <= q < 8)
	for _, c := range []struct {
		name string
		tab  *wire.DecisionTable
		at   int // when it was brought up to date, ms after the push
		now  int
		want bool
	}{
		{"nothing new, before the heartbeat", table(7, "m1", 3, 4), 10, 10, false},
		{"queue moved within its row", table(7, "m1", 3, 7), 10, 10, false},
		{"queue moved to another row", table(7, "m1", 3, 8), 10, 10, true},
		{"queue moved to a lower row", table(7, "m1", 3, 3), 10, 10, true},
		{"new epoch", table(8, "m1", 3, 4), 10, 10, true},
		{"new model", table(7, "m2", 3, 4), 10, 10, true},
		{"new node snapshot", table(7, "m1", 4, 4), 10, 10, true},
		{"heartbeat due", table(7, "m1", 3, 5), 19, 20, true},
		{"heartbeat due but no refresh since the push", table(7, "m1", 3, 4), 0, 25, false},
		{"no table", nil, 10, 30, false},
	} {
		p := tablePace{heartbeat: hb}
		p.sent(base, t0, t0)
		if got := p.due(c.tab, at(c.at), at(c.now)); got != c.want {
			t.Errorf("%s: due %v, want %v", c.name, got, c.want)
		}
	}

	// The first table always goes; without a bound every refresh does.
	var first tablePace
	if !first.due(base, t0, t0) {
		t.Error("first table not due")
	}
	every := tablePace{heartbeat: tableHeartbeat(&wire.Subscribe{})}
	every.sent(base, t0, t0)
	if !every.due(table(7, "m1", 3, 4), at(1), at(1)) || every.due(base, t0, at(1)) {
		t.Error("without a bound: want every new refresh pushed and the same one not")
	}

	// The wait: the poll, or the heartbeat when it falls due sooner.
	p := tablePace{heartbeat: hb}
	if w := p.wait(10*time.Millisecond, t0); w != 10*time.Millisecond {
		t.Errorf("wait before the first push %v, want the poll", w)
	}
	p.sent(base, t0, t0)
	for _, c := range []struct{ now, want int }{{0, 10}, {10, 10}, {15, 5}, {20, 10}, {30, 10}} {
		if w := p.wait(10*time.Millisecond, at(c.now)); w != time.Duration(c.want)*time.Millisecond {
			t.Errorf("wait at %d ms after the push %v, want %d ms", c.now, w, c.want)
		}
	}
}
