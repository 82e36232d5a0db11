package serve

import (
	"context"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/wire"
)

// Decision tables on triage/1 (docs/local-decisions.md): a subscription
// in SUBSCRIBE_MODE_TABLE gets the backend's DecisionTable pushed each time
// the backend brings it up to date, each frame a delta of the previous one;
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
	// in this call. The returned table is not modified afterwards.
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
	var last *wire.DecisionTable
	var lastAt time.Time
	pushEach(ctx, str, sw, nc.interval(sub), func() *wire.Envelope {
		tab, at := tb.Table()
		if tab == nil || (tab == last && at.Equal(lastAt)) {
			return nil
		}
		last, lastAt = tab, at
		return &wire.Envelope{Body: &wire.Envelope_DecisionTable{DecisionTable: withAge(tab, time.Since(at))}}
	})
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
