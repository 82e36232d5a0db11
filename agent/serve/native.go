package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/wire"
)

// nativeConn is one triage/1 connection after its Hello.
type nativeConn struct {
	s    *Server
	conn *quic.Conn

	dgMu sync.Mutex
	dg   *datagramSub // the connection's datagram subscription, if any (one at most)

	replySlots chan struct{} // bounds datagram replies being sent at once
}

// answerWriteTimeout bounds the write of one answer on a native stream.
const answerWriteTimeout = 10 * time.Second

// serveNative runs one native connection: the first stream must open with a
// Hello (version and, when configured, the bearer token); after it the
// connection's streams are served concurrently, each independently.
func (s *Server) serveNative(conn *quic.Conn) {
	ctx := conn.Context()
	hctx, cancel := context.WithTimeout(ctx, s.cfg.HelloTimeout)
	str, err := conn.AcceptStream(hctx)
	cancel()
	if err != nil {
		s.rejectConn(conn, wire.CodeIdle, "no stream with Hello within "+s.cfg.HelloTimeout.String())
		return
	}
	fr, fw, err := s.framers(str)
	if err != nil {
		s.rejectConn(conn, wire.CodeInternal, err.Error())
		return
	}
	_ = str.SetReadDeadline(time.Now().Add(s.cfg.HelloTimeout))
	var env wire.Envelope
	if err := fr.Read(&env); err != nil {
		s.rejectConn(conn, wire.CodeOf(err), "reading Hello: "+err.Error())
		return
	}
	_ = str.SetReadDeadline(time.Time{})
	hello := env.GetHello()
	switch {
	case hello == nil:
		s.rejectConn(conn, wire.CodeMalformed, fmt.Sprintf("first message is %T, want Hello", env.GetBody()))
		return
	case hello.GetVersion() != wire.ProtocolVersion:
		s.rejectConn(conn, wire.CodeUnsupported, fmt.Sprintf("protocol version %d, this agent speaks %d", hello.GetVersion(), wire.ProtocolVersion))
		return
	case !s.authorized(hello.GetToken()):
		_ = fw.Write(errorEnvelope(wire.CodeUnauthenticated, "missing or invalid bearer token", 0))
		s.rejectConn(conn, wire.CodeUnauthenticated, "missing or invalid bearer token")
		return
	}
	ok := &wire.Envelope{Body: &wire.Envelope_HelloOk{HelloOk: &wire.HelloOK{
		Version: wire.ProtocolVersion, MaxBatch: uint32(s.cfg.MaxBatch), MaxFrame: uint32(s.cfg.MaxFrameBytes),
	}}}
	if err := fw.Write(ok); err != nil {
		conn.CloseWithError(quic.ApplicationErrorCode(wire.CodeInternal), "writing HelloOK")
		return
	}
	nc := &nativeConn{s: s, conn: conn, replySlots: make(chan struct{}, 8)}
	go nc.readDatagrams(ctx)
	go nc.serveStream(str, fr, fw)
	for {
		str, err := conn.AcceptStream(ctx)
		if err != nil {
			return
		}
		fr, fw, err := s.framers(str)
		if err != nil {
			str.CancelRead(quic.StreamErrorCode(wire.CodeInternal))
			str.CancelWrite(quic.StreamErrorCode(wire.CodeInternal))
			continue
		}
		go nc.serveStream(str, fr, fw)
	}
}

// framers are a native stream's reader and writer. The writer's frames
// are all full (wire.CallOptions), encoded by the endpoint's shared
// encoders: a stream keeps no zstd encoder of its own.
func (s *Server) framers(str *quic.Stream) (*wire.FrameReader, *wire.FrameWriter, error) {
	fr, err := wire.NewFrameReader(str, s.cfg.MaxFrameBytes)
	if err != nil {
		return nil, nil, err
	}
	fw := wire.NewPooledFrameWriter(answerWriter{str}, s.callEncoders)
	fw.Count = s.stats.countFrame
	return fr, fw, nil
}

// answerWriter writes a native stream's answers. An answer that QUIC's
// flow control has room for is queued at once (TryWriteAll: the stream's
// goroutine goes back to reading without waiting for the packet to leave,
// and arms no deadline timer); otherwise it is written with
// answerWriteTimeout as the deadline, so that a client that stops reading
// its answers cannot pin the goroutine forever.
type answerWriter struct{ str *quic.Stream }

func (w answerWriter) Write(p []byte) (int, error) {
	err := w.str.TryWriteAll(p)
	if err == nil {
		return len(p), nil
	}
	if !errors.Is(err, quic.ErrWouldBlock) {
		return 0, err
	}
	_ = w.str.SetWriteDeadline(time.Now().Add(answerWriteTimeout))
	return w.str.Write(p)
}

func (s *Server) rejectConn(conn *quic.Conn, code wire.Code, reason string) {
	s.stats.RejectedConns.Add(1)
	s.cfg.Logger.Warn("closing native connection", "remote", conn.RemoteAddr().String(), "code", code.String(), "reason", reason)
	conn.CloseWithError(quic.ApplicationErrorCode(code), reason)
}

func errorEnvelope(code wire.Code, reason string, reqID uint64) *wire.Envelope {
	return &wire.Envelope{Body: &wire.Envelope_Error{Error: &wire.Error{Code: uint32(code), Reason: reason, ReqId: reqID}}}
}

// serveStream answers the messages of one stream in order (the client
// pipelines: it may send many requests before reading). A frame that cannot
// be read or decoded ends this stream only: the server sends an Error with
// the code and reason, finishes its side and stops reading with the code.
func (nc *nativeConn) serveStream(str *quic.Stream, fr *wire.FrameReader, fw *wire.FrameWriter) {
	ctx := nc.conn.Context()
	var env wire.Envelope
	for {
		err := fr.Read(&env)
		if errors.Is(err, io.EOF) {
			str.Close()
			return
		}
		if err != nil {
			nc.failStream(str, fw, wire.CodeOf(err), err.Error())
			return
		}
		switch body := env.GetBody().(type) {
		case *wire.Envelope_DecideRequest:
			if err := fw.Write(nc.s.decide(ctx, body.DecideRequest)); err != nil {
				str.CancelRead(quic.StreamErrorCode(wire.CodeInternal))
				return
			}
		case *wire.Envelope_OutcomeReport:
			if err := fw.Write(nc.s.outcomes(ctx, body.OutcomeReport)); err != nil {
				str.CancelRead(quic.StreamErrorCode(wire.CodeInternal))
				return
			}
		case *wire.Envelope_LocalReport:
			if err := fw.Write(nc.s.localReport(ctx, body.LocalReport)); err != nil {
				str.CancelRead(quic.StreamErrorCode(wire.CodeInternal))
				return
			}
		case *wire.Envelope_Subscribe:
			nc.subscribe(str, fr, fw, body.Subscribe)
			return
		case *wire.Envelope_Ack:
			nc.ack(body.Ack.GetHash())
		case *wire.Envelope_Hello:
			// A repeated Hello is harmless; the connection is already authenticated.
		default:
			nc.failStream(str, fw, wire.CodeMalformed, fmt.Sprintf("unexpected %T from a client", body))
			return
		}
	}
}

func (nc *nativeConn) failStream(str *quic.Stream, fw *wire.FrameWriter, code wire.Code, reason string) {
	nc.s.stats.StreamErrors.Add(1)
	nc.s.cfg.Logger.Info("closing native stream", "remote", nc.conn.RemoteAddr().String(), "stream", int64(str.StreamID()), "code", code.String(), "reason", reason)
	_ = str.SetWriteDeadline(time.Now().Add(time.Second))
	_ = fw.Write(errorEnvelope(code, reason, 0))
	str.Close()
	str.CancelRead(quic.StreamErrorCode(code))
}

// decide serves one DecideRequest; a request the limits refuse, or that the
// backend fails, gets an Error with its req_id and the stream goes on.
func (s *Server) decide(ctx context.Context, req *wire.DecideRequest) *wire.Envelope {
	resp, err := s.decideCall(ctx, ProtocolNative, req.GetTasks())
	if err != nil {
		return errorEnvelope(err.code, err.msg, req.GetReqId())
	}
	resp.ReqId = req.GetReqId()
	return &wire.Envelope{Body: &wire.Envelope_DecideResponse{DecideResponse: resp}}
}

func (s *Server) outcomes(ctx context.Context, rep *wire.OutcomeReport) *wire.Envelope {
	n, err := s.outcomesCall(ctx, ProtocolNative, rep.GetOutcomes())
	if err != nil {
		return errorEnvelope(err.code, err.msg, rep.GetReqId())
	}
	return &wire.Envelope{Body: &wire.Envelope_OutcomeAccepted{OutcomeAccepted: &wire.OutcomeAccepted{
		ReqId: rep.GetReqId(), Accepted: uint32(n),
	}}}
}
