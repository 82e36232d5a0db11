package client

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

// Retry delays of the table subscription: after a failure, and after an
// agent that publishes no tables said so (it may be upgraded meanwhile).
const (
	tableRetry            = 100 * time.Millisecond
	tableUnsupportedRetry = time.Minute
)

// runTables keeps a table subscription up until ctx ends. Between two
// subscriptions there is no table: tasks go to the agent.
func (l *localDecider) runTables(ctx context.Context) {
	c := l.c
	for ctx.Err() == nil {
		s, err := c.session(ctx)
		if err != nil {
			continue // session() already waits out the backoff
		}
		err = l.tablesOnce(ctx, s)
		l.table.Store(nil)
		if ctx.Err() != nil {
			return
		}
		wait := tableRetry
		var se *ServerError
		if errors.As(err, &se) && se.Code == wire.CodeUnsupported {
			if !l.stats.unsupported.Swap(true) {
				c.cfg.Logger.Info("the agent publishes no decision tables; every task goes to it", "reason", se.Reason)
			}
			wait = tableUnsupportedRetry
		} else {
			c.cfg.Logger.Debug("decision-table subscription interrupted; resubscribing", "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// interval is how often the agent is asked to look at the table for
// changes: every third of the staleness bound, the pace at which an
// unchanged table is re-dated anyway (Subscribe.max_staleness_ms), so that a change
// reaches the client within a third of the bound and the agent wakes no
// more often for changes than for heartbeats. It was a fifth: every look
// is a wake-up of the agent, and the agent's CPU is taken from the node's
// work (docs/footprint-history.md, "Fewer wake-ups").
func (l *localDecider) interval() time.Duration {
	return max(l.c.cfg.MaxStaleness/3, time.Millisecond)
}

// subscribe is the table subscription: looked at every interval, and
// with the staleness bound, so that the agent pushes only what changed and
// re-dates an unchanged table often enough to keep it inside the bound (a
// bound under a millisecond is sent as 0: every refresh is pushed).
func (l *localDecider) subscribe() *wire.Subscribe {
	return &wire.Subscribe{
		Mode:           wire.SubscribeMode_SUBSCRIBE_MODE_TABLE,
		MinIntervalMs:  uint32(max(l.interval()/time.Millisecond, 1)),
		MaxStalenessMs: uint32(min(l.c.cfg.MaxStaleness/time.Millisecond, math.MaxUint32)),
	}
}

// tablesOnce runs one subscription on one connection until it fails.
func (l *localDecider) tablesOnce(ctx context.Context, s *session) error {
	fr, release, err := l.c.openSubscription(ctx, s, l.subscribe())
	if err != nil {
		return err
	}
	defer release()
	return readSubscription(fr, func(env *wire.Envelope) {
		if t := env.GetDecisionTable(); t != nil {
			l.countFrame(fr.LastFrame())
			l.receive(t, time.Now())
		}
	})
}

func (l *localDecider) countFrame(n int, kind codec.Kind) {
	if kind == codec.KindDelta {
		l.stats.deltaFrames.Add(1)
		l.stats.deltaBytes.Add(int64(n))
		return
	}
	l.stats.fullFrames.Add(1)
	l.stats.fullBytes.Add(int64(n))
}

// receive makes t the current table, unless it fails its checks: the
// table before it then stays, until it is too old.
func (l *localDecider) receive(t *wire.DecisionTable, now time.Time) {
	tb, err := decodeTable(t, now)
	if err != nil {
		l.stats.badTables.Add(1)
		l.c.cfg.Logger.Warn("decision table refused", "epoch", t.GetEpoch(), "err", err)
		return
	}
	tb.base = queueCounts{reported: l.reported.Load(), remote: l.remote.Load(), outAcked: l.outAcked.Load()}
	l.table.Store(tb)
	st := t.GetState()
	l.c.reserve.offer(st.GetBackgroundReserve(), st.GetBackgroundShortMs(), st.GetBackgroundUrgentSlaMs())
	l.stats.tables.Add(1)
	l.stats.unsupported.Store(false)
}
