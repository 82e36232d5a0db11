package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// tableWatch is a table subscription opened by hand on a raw connection,
// recording each table frame's epoch and arrival.
type tableWatch struct {
	mu     sync.Mutex
	epochs []uint64
	times  []time.Time
}

func watchTableFrames(t *testing.T, ta *testAgent, sub *wire.Subscribe) *tableWatch {
	t.Helper()
	rs := dialRawStream(t, ta)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	str, err := rs.conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fw, _ := wire.NewFrameWriter(str)
	fr, _ := wire.NewFrameReader(str, 0)
	if err := fw.Write(&wire.Envelope{Body: &wire.Envelope_Subscribe{Subscribe: sub}}); err != nil {
		t.Fatal(err)
	}
	w := &tableWatch{}
	go func() {
		for {
			var env wire.Envelope
			if err := fr.Read(&env); err != nil {
				return
			}
			if tab := env.GetDecisionTable(); tab != nil {
				w.mu.Lock()
				w.epochs, w.times = append(w.epochs, tab.GetEpoch()), append(w.times, time.Now())
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// frames returns how many frames came so far and the newest epoch.
func (w *tableWatch) frames() (n int, epoch uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.epochs) == 0 {
		return 0, 0
	}
	return len(w.epochs), w.epochs[len(w.epochs)-1]
}

// An unchanged table is pushed at the heartbeat (a third of the client's
// staleness bound), not at every refresh; a new epoch is pushed at the
// next look, long before the heartbeat; a subscription that gives no bound
// gets every refresh, as before.
func TestTableSubscriptionPushesOnChange(t *testing.T) {
	// No node snapshot after the first: nothing the client reads changes
	// until the test asks about a new class.
	ta := localAgent(t, Config{StateInterval: time.Hour})
	const bound = 3 * time.Second // a heartbeat every second
	paced := watchTableFrames(t, ta, &wire.Subscribe{Mode: wire.SubscribeMode_SUBSCRIBE_MODE_TABLE, MinIntervalMs: 5, MaxStalenessMs: uint32(bound / time.Millisecond)})
	every := watchTableFrames(t, ta, &wire.Subscribe{Mode: wire.SubscribeMode_SUBSCRIBE_MODE_TABLE, MinIntervalMs: 5})
	waitFor(t, 5*time.Second, "first tables", func() bool {
		a, _ := paced.frames()
		b, _ := every.frames()
		return a > 0 && b > 0
	})
	start, _ := paced.frames()
	startEvery, _ := every.frames()
	const window = 1500 * time.Millisecond
	time.Sleep(window)
	end, epoch := paced.frames()
	endEvery, _ := every.frames()
	t.Logf("unchanged table, %v: %d frames with the bound, %d without", window, end-start, endEvery-startEvery)
	if heartbeats := int(window / (bound / 3)); end-start > heartbeats+1 {
		t.Fatalf("%d frames of an unchanged table in %v, want at most %d (heartbeat every %v)", end-start, window, heartbeats+1, bound/3)
	}
	if end-start < 1 {
		t.Fatalf("no heartbeat in %v (every %v)", window, bound/3)
	}
	// Every refresh is 10 ms apart: a subscription without a bound gets
	// most of them (the machine may delay a few).
	if endEvery-startEvery < int(window/DefaultTableInterval)/3 {
		t.Fatalf("%d frames without a bound in %v, want about one per %v refresh", endEvery-startEvery, window, DefaultTableInterval)
	}

	// A class asked about makes a new epoch; it comes at the next look.
	asked := time.Now()
	if _, err := ta.dial(t).DecideRemote(context.Background(), []*wire.Task{urgentTask(1)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a new epoch", func() bool {
		_, e := paced.frames()
		return e != epoch
	})
	paced.mu.Lock()
	var took time.Duration
	for i, e := range paced.epochs {
		if e != epoch && paced.times[i].After(asked) {
			took = paced.times[i].Sub(asked)
			break
		}
	}
	paced.mu.Unlock()
	t.Logf("new epoch pushed %v after the task was asked about", took)
	if took > bound/6 {
		t.Fatalf("new epoch pushed %v after the change, want well within the %v heartbeat", took, bound/3)
	}
}

// With the default bound (50 ms) the client's table stays fresh: a
// trickle of local decisions without outcomes, decided locally. Once the
// queue is past the table's last row (64 tasks per worker) and the node
// snapshot stands still, nothing the client reads changes and only
// heartbeats re-date the table: about one per third of the bound. A
// heartbeat can come late only when the machine stalls the agent or the
// client for over 30 ms (CI runs two test binaries on two cores): a few
// such tasks in 2% go to the agent, as in production, and never a task
// for want of a table or a cell.
func TestHeartbeatKeepsTheClientsTableFresh(t *testing.T) {
	ta := localAgent(t, Config{StateInterval: time.Hour})
	cl := localClient(t, ta, client.Config{})
	untilLocal(t, cl, scoringTask(1))
	before := cl.LocalStats()
	// decide decides n tasks locally, 5 ms apart, and returns how many it
	// did (all but the few a stalled machine let go stale).
	decide := func(from, n int) int {
		missed := 0
		for i := range n {
			if _, ok := cl.DecideLocal(scoringTask(uint64(from + i))); !ok {
				s := cl.LocalStats()
				if missed++; s.NoTable != before.NoTable || s.NotInTable != before.NotInTable || missed > n/50 {
					t.Fatalf("task %d not decided locally (%d of %d so far): stale %d (was %d), no table %d, not in table %d", from+i, missed, i+1, s.Stale, before.Stale, s.NoTable, s.NotInTable)
				}
				t.Logf("task %d found the table stale (%d of %d so far)", from+i, missed, i+1)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return n - missed
	}
	local := decide(1000, 80) // the queue past 64 tasks
	waitFor(t, 5*time.Second, "the local decisions reported", func() bool { return ta.tracker.len() >= local })
	quiet := cl.LocalStats()
	start := time.Now()
	decide(2000, 150)
	elapsed := time.Since(start)
	s := cl.LocalStats()
	tables := s.Tables - quiet.Tables
	t.Logf("staleness p50 %v, p99 %v; %d tables in %v on a quiet table", s.StalenessP50, s.StalenessP99, tables, elapsed)
	if s.StalenessP99 > client.DefaultMaxStaleness {
		t.Fatalf("staleness p99 %v, bound %v", s.StalenessP99, client.DefaultMaxStaleness)
	}
	if most := int64(elapsed/(client.DefaultMaxStaleness/3)) + 2; tables > most {
		t.Fatalf("%d tables in %v with nothing changed, want at most %d (heartbeats)", tables, elapsed, most)
	}
}
