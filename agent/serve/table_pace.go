package serve

import (
	"time"

	"github.com/triage-agent/triage/wire"
)

// When a table subscription pushes (docs/local-decisions.md, "Pushes").
//
// A push costs the agent a marshal of the whole table and a delta encode
// (xxhash and zstd; a change also re-keys zstd, writeTable), so pushes
// follow what the client decides from, not the refresh clock.
// From a frame the client reads:
//
//   - the epoch, model, queue edges and classes (intervals and levels):
//     a backend gives a new epoch whenever any of these changes
//     (TableBackend), so the epoch stands for all of them;
//   - queue_len, the base of its queue estimate. Between frames the
//     client adds the tasks it decided and takes off the outcomes it
//     reported, so what a fresh queue_len tells it is only what others did
//     (other clients, tasks the agent timed out, reports that failed).
//     That matters when it moves the row the client looks up: a queue_len
//     in another row (wire.FindRow over the edges) than the last pushed is
//     pushed at once; a move within the row waits for the heartbeat;
//   - the node state's epoch, which it names in the answers it builds
//     (DecideResponse.state_epoch): a new one is pushed (one per node
//     snapshot, 10 a second by default);
//   - age_us, the table's age when sent, from which it judges staleness.
//
// Anything else is re-dated by a heartbeat: the newest table pushed when
// nothing was pushed for a third of the client's staleness bound
// (Subscribe.max_staleness_ms). The client's age of its table is the age
// in the last frame plus the time since it arrived, so a suppressed frame
// never makes it decide from older data than it believes; the heartbeat
// keeps that age, for a healthy agent, at most a third of the bound plus
// the age at the push (under a refresh interval) plus the path's delay,
// well inside the bound. A client that gives no bound gets every refresh,
// as before the field existed.

// heartbeatFraction is the part of the client's staleness bound after
// which an unchanged table is pushed again.
const heartbeatFraction = 3

// tableHeartbeat is how often an unchanged table is re-dated for sub; 0
// pushes every refresh.
func tableHeartbeat(sub *wire.Subscribe) time.Duration {
	return time.Duration(sub.GetMaxStalenessMs()) * time.Millisecond / heartbeatFraction
}

// tablePace is one subscription's record of what it last pushed.
type tablePace struct {
	heartbeat time.Duration

	pushed     bool
	epoch      uint64
	model      string
	stateEpoch uint64
	row        int
	at         time.Time // when the pushed table was brought up to date
	sentAt     time.Time // when it was pushed
}

// due reports whether tab, brought up to date at at, is to be pushed at
// now.
func (p *tablePace) due(tab *wire.DecisionTable, at, now time.Time) bool {
	switch {
	case tab == nil:
		return false
	case !p.pushed, p.changed(tab):
		return true
	case !at.After(p.at):
		return false // nothing newer than what the client has
	case p.heartbeat <= 0:
		return true
	default:
		return now.Sub(p.sentAt) >= p.heartbeat
	}
}

// changed reports whether tab differs from the last pushed table in
// anything the client decides from (see above).
func (p *tablePace) changed(tab *wire.DecisionTable) bool {
	return tab.GetEpoch() != p.epoch || tab.GetModel() != p.model || tab.GetState().GetEpoch() != p.stateEpoch ||
		queueRow(tab) != p.row
}

// changes reports whether pushing tab changes what the client decides
// from (the first push does), as opposed to re-dating the last push: a
// heartbeat, or any refresh for a client that gave no bound. The first
// kind re-keys the stream's delta encoder, the second deltas against the
// key (writeTable).
func (p *tablePace) changes(tab *wire.DecisionTable) bool {
	return !p.pushed || p.changed(tab)
}

// sent records that tab was pushed at now.
func (p *tablePace) sent(tab *wire.DecisionTable, at, now time.Time) {
	p.pushed, p.epoch, p.model, p.stateEpoch, p.row = true, tab.GetEpoch(), tab.GetModel(), tab.GetState().GetEpoch(), queueRow(tab)
	p.at, p.sentAt = at, now
}

// wait is how long to sleep before the next look at the table: the poll
// interval, or less when a heartbeat falls due sooner.
func (p *tablePace) wait(poll time.Duration, now time.Time) time.Duration {
	if p.heartbeat <= 0 || !p.pushed {
		return poll
	}
	if until := p.sentAt.Add(p.heartbeat).Sub(now); until > 0 && until < poll {
		return until
	}
	return poll
}

// queueRow is the row of tab's queue_len, as the client looks it up.
func queueRow(tab *wire.DecisionTable) int {
	return wire.FindRow(tab.GetQueueEdges(), float32(tab.GetQueueLen()))
}
