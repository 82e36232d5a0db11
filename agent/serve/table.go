package serve

import (
	"context"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/wire"
)

// Decision tables on triage/1 (docs/local-decisions.md): a subscription
// in SUBSCRIBE_MODE_TABLE gets the backend's DecisionTable pushed when what
// the client decides from changes, and re-dated by a heartbeat otherwise
// (table_pace.go), each frame a delta of the last changed table
// (writeTable);
// the decisions a client takes from it come back in LocalReport calls,
// which go through the one call path like decide and outcomes. A backend
// that is not a TableBackend serves neither: the subscription and the
// report are refused with CodeUnsupported, and the client decides remotely.

// TableBackend is a Backend that publishes decision tables and takes the
// decisions clients took from them. Every method must be safe for
// concurrent use.
type TableBackend interface {
	Backend
	// Table returns the current table and when the backend last brought it
	// up to date (nil while it has none). Every table subscription calls it
	// every interval; the backend may do the work of bringing it up to date
	// in this call. The returned table is not modified afterwards. Two
	// tables with the same epoch have the same model, queue edges and
	// classes (levels included): only queue_len, the node state and the
	// time may differ, and a subscription pushes on a new epoch, not on
	// the bytes (table_pace.go).
	Table() (t *wire.DecisionTable, current time.Time)
	// ReportLocal takes decisions clients took from tables, each with the
	// table epoch and cell it came from, and returns how many it accepted.
	ReportLocal(ctx context.Context, decisions []*wire.LocalDecision) (accepted int, err error)
}

// methodLocal labels LocalReport calls in the endpoint's metrics.
const methodLocal = "local_report"

// subscribeTables pushes tables on str until the client finishes or
// resets it, or the connection ends.
func (nc *nativeConn) subscribeTables(ctx context.Context, cancel context.CancelFunc, str *quic.Stream, fr *wire.FrameReader, fw *wire.FrameWriter, sub *wire.Subscribe) {
	tb, ok := nc.s.backend.(TableBackend)
	if !ok {
		nc.failStream(str, fw, wire.CodeUnsupported, "this agent publishes no decision tables")
		return
	}
	// Deltas, as for node-state snapshots: a table that changed a few
	// cells costs a few bytes.
	sw, ok := nc.startPush(ctx, cancel, str, fr, fw)
	if !ok {
		return
	}
	nc.pushTables(ctx, str, sw, tb, nc.interval(sub), tableHeartbeat(sub))
}

// pushTables looks at the backend's table every poll and pushes it when
// tablePace says so, until ctx ends; then it finishes the stream. A write
// that fails resets it (writePush).
func (nc *nativeConn) pushTables(ctx context.Context, str *quic.Stream, sw *wire.FrameWriter, tb TableBackend, poll, heartbeat time.Duration) {
	pace := tablePace{heartbeat: heartbeat}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			str.Close()
			return
		case <-t.C:
		}
		tab, at := tb.Table()
		now := time.Now()
		if pace.due(tab, at, now) {
			changed := pace.changes(tab)
			if !pushWrite(str, func() error { return writeTable(sw, tab, now.Sub(at), changed) }) {
				return
			}
			pace.sent(tab, at, now)
		}
		t.Reset(pace.wait(poll, time.Now()))
	}
}

// writeTable writes tab, aged age, as one push on fw. A table that
// changed what the client decides from becomes the frame writer's key; a
// heartbeat (the same table re-dated, or a queue move within its row) is a
// delta against that key, which differs from it in a few bytes and whose
// zstd dictionary is already built: re-keying zstd on every push was most
// of a push's cost (docs/footprint-history.md, "Table pushes"). The client
// reads both as any frame of the stream.
func writeTable(fw *wire.FrameWriter, tab *wire.DecisionTable, age time.Duration, changed bool) error {
	return fw.WriteKeyed(&wire.Envelope{Body: &wire.Envelope_DecisionTable{DecisionTable: withAge(tab, age)}}, changed)
}

// withAge is t with age_us set to age (a new message sharing t's slices:
// the backend's table is never written to).
func withAge(t *wire.DecisionTable, age time.Duration) *wire.DecisionTable {
	us := age.Microseconds()
	if us < 0 {
		us = 0
	}
	return &wire.DecisionTable{
		Epoch: t.GetEpoch(), Model: t.GetModel(), AgeUs: uint32(min(us, 1<<32-1)), QueueLen: t.GetQueueLen(),
		QueueEdges: t.GetQueueEdges(), Classes: t.GetClasses(), State: t.GetState(),
	}
}

// localReport serves one LocalReport on a native stream.
func (s *Server) localReport(ctx context.Context, rep *wire.LocalReport) *wire.Envelope {
	n, err := s.localCall(ctx, ProtocolNative, rep.GetDecisions())
	if err != nil {
		return errorEnvelope(err.code, err.msg, rep.GetReqId())
	}
	return &wire.Envelope{Body: &wire.Envelope_LocalAccepted{LocalAccepted: &wire.LocalAccepted{ReqId: rep.GetReqId(), Accepted: uint32(n)}}}
}

// localCall takes a client's local decisions: the batch limit and the task
// ids are checked here as for decide calls, then the backend takes them.
func (s *Server) localCall(ctx context.Context, p Protocol, ds []*wire.LocalDecision) (int, *callError) {
	start := time.Now()
	n, err := s.localChecked(ctx, ds)
	s.metrics.observe(p, methodLocal, codeOf(err), time.Since(start))
	return n, err
}

func (s *Server) localChecked(ctx context.Context, ds []*wire.LocalDecision) (int, *callError) {
	tb, ok := s.backend.(TableBackend)
	if !ok {
		return 0, refuse(wire.CodeUnsupported, "this agent publishes no decision tables")
	}
	if len(ds) > s.cfg.MaxBatch {
		return 0, refuse(wire.CodeBatchTooLarge, "%d local decisions, limit %d", len(ds), s.cfg.MaxBatch)
	}
	for i, d := range ds {
		if d.GetTask() == nil {
			return 0, refuse(wire.CodeInvalidArgument, "local decision %d: no task", i)
		}
		if err := wire.CheckTaskID(d.GetTask()); err != nil {
			return 0, refuse(wire.CodeInvalidArgument, "local decision %d: %v", i, err)
		}
		if d.GetPriority() > wire.MaxPriority {
			return 0, refuse(wire.CodeInvalidArgument, "local decision %d: priority %d, at most %d", i, d.GetPriority(), wire.MaxPriority)
		}
	}
	n, err := tb.ReportLocal(ctx, ds)
	if err != nil {
		return n, refuse(wire.CodeInternal, "reporting local decisions: %v", err)
	}
	return n, nil
}
