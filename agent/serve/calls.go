package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/triage-agent/triage/wire"
)

// The one call path. Every transport (triage/1 streams and datagrams,
// HTTP/3, HTTP/2, HTTP/1.1, gRPC) decodes its request into wire messages,
// calls one of the functions below and encodes what they return: the limits
// (batch size, task ids) are checked, the backend called and the metrics
// counted here and nowhere else. Authentication is one check too
// (Server.authorized), which each transport applies where its protocol puts
// the credential.

// Protocol is the transport a call came on: the protocol label of the
// endpoint's metrics.
type Protocol uint8

const (
	ProtocolNative Protocol = iota // triage/1 over QUIC
	ProtocolHTTP3                  // JSON over HTTP/3
	ProtocolGRPC                   // gRPC over TCP (HTTP/2)
	ProtocolHTTP1                  // JSON over HTTP/1.1
	ProtocolHTTP2                  // JSON over HTTP/2
	numProtocols
)

var protocolNames = [numProtocols]string{"native", "h3", "grpc", "http1", "http2"}

func (p Protocol) String() string {
	if p < numProtocols {
		return protocolNames[p]
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// Methods of the API, the method label of the endpoint's metrics.
const (
	methodDecide   = "decide"
	methodOutcomes = "outcomes"
	methodState    = "state"
	methodOpenAPI  = "openapi"
	methodOther    = "other" // unknown routes and methods (HTTP)
)

// callError is a call refused or failed, with the code that each transport
// maps to its own status (an Error message, an HTTP status, a gRPC code).
type callError struct {
	code wire.Code
	msg  string
}

func (e *callError) Error() string { return e.msg }

func refuse(code wire.Code, format string, args ...any) *callError {
	return &callError{code: code, msg: fmt.Sprintf(format, args...)}
}

// decideCall decides tasks for a client of protocol p. The response's
// ReqId is the caller's to set.
func (s *Server) decideCall(ctx context.Context, p Protocol, tasks []*wire.Task) (*wire.DecideResponse, *callError) {
	start := time.Now()
	resp, err := s.decideChecked(ctx, tasks)
	s.metrics.observe(p, methodDecide, codeOf(err), time.Since(start))
	if err == nil {
		s.stats.Requests.Add(1)
		s.stats.Decisions.Add(int64(len(resp.Decisions)))
		s.metrics.decisions[p].Add(float64(len(resp.Decisions)))
	}
	return resp, err
}

func (s *Server) decideChecked(ctx context.Context, tasks []*wire.Task) (*wire.DecideResponse, *callError) {
	if len(tasks) > s.cfg.MaxBatch {
		return nil, refuse(wire.CodeBatchTooLarge, "%d tasks, limit %d", len(tasks), s.cfg.MaxBatch)
	}
	for i, t := range tasks {
		if err := wire.CheckTaskID(t); err != nil {
			return nil, refuse(wire.CodeInvalidArgument, "task %d: %v", i, err)
		}
	}
	decisions, model, epoch, err := s.backend.Decide(ctx, tasks)
	if err != nil {
		return nil, refuse(wire.CodeInternal, "deciding: %v", err)
	}
	// The reserve is the latest snapshot's, not the deciding one's: it is
	// an instruction for the executor now.
	latest := s.backend.State()
	return &wire.DecideResponse{
		Decisions: decisions, Model: model, StateEpoch: epoch,
		BackgroundReserve: latest.GetBackgroundReserve(), BackgroundShortMs: latest.GetBackgroundShortMs(),
		BackgroundUrgentSlaMs: latest.GetBackgroundUrgentSlaMs(),
	}, nil
}

// outcomesCall takes a client's outcomes and returns how many were accepted.
func (s *Server) outcomesCall(ctx context.Context, p Protocol, outs []*wire.Outcome) (int, *callError) {
	start := time.Now()
	err := s.outcomesChecked(ctx, outs)
	s.metrics.observe(p, methodOutcomes, codeOf(err), time.Since(start))
	if err != nil {
		return 0, err
	}
	return len(outs), nil
}

func (s *Server) outcomesChecked(ctx context.Context, outs []*wire.Outcome) *callError {
	if len(outs) > s.cfg.MaxBatch {
		return refuse(wire.CodeBatchTooLarge, "%d outcomes, limit %d", len(outs), s.cfg.MaxBatch)
	}
	for i, o := range outs {
		if err := wire.CheckTaskID(o); err != nil {
			return refuse(wire.CodeInvalidArgument, "outcome %d: %v", i, err)
		}
		// A latency that is not a duration is the caller's mistake (400),
		// not the backend failing (found by FuzzJSONBodies).
		if err := wire.CheckOutcome(o); err != nil {
			return refuse(wire.CodeInvalidArgument, "outcome %d: %v", i, err)
		}
	}
	if err := s.backend.ReportOutcomes(ctx, outs); err != nil {
		return refuse(wire.CodeInternal, "reporting outcomes: %v", err)
	}
	return nil
}

// stateCall returns the current node state; nil before the first snapshot
// is a CodeUnavailable refusal.
func (s *Server) stateCall(p Protocol) (*wire.NodeState, *callError) {
	start := time.Now()
	st := s.backend.State()
	var err *callError
	if st == nil {
		err = refuse(wire.CodeUnavailable, "no node state yet")
	}
	s.metrics.observe(p, methodState, codeOf(err), time.Since(start))
	return st, err
}

// countCall counts a call that does not go through the functions above: one
// turned away before (authentication, a body that is not JSON, an unknown
// route), or one with nothing to check (the OpenAPI document).
func (s *Server) countCall(p Protocol, method string, code wire.Code) {
	s.metrics.observe(p, method, code, 0)
}

// authorized reports whether a bearer token presented on any transport is
// accepted (always, when the endpoint has no tokens: a client CA, when
// configured, is checked by TLS before any call).
func (s *Server) authorized(token string) bool {
	return !s.cfg.Auth.Configured() || s.cfg.Auth.Check(token)
}

// authorizedHeader is authorized for an "Authorization: Bearer <token>"
// header (HTTP) or metadata value (gRPC).
func (s *Server) authorizedHeader(h string) bool {
	return !s.cfg.Auth.Configured() || s.cfg.Auth.CheckHeader(h)
}

func codeOf(err *callError) wire.Code {
	if err == nil {
		return wire.CodeOK
	}
	return err.code
}
