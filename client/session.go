package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

var errSessionDead = errors.New("client: connection lost")

// datagramRetry is the interval of the datagram copies of a slow call.
const datagramRetry = 100 * time.Millisecond

// session is one QUIC connection: the Hello stream (which then carries
// decide calls like the others) and Streams-1 more decide streams.
type session struct {
	c       *Client
	conn    *quic.Conn
	streams []*callStream
	next    atomic.Uint32
	dead    atomic.Bool

	dgMu  sync.Mutex
	dgSub func([]byte) // datagram subscriber of this connection (ChanState frames), if any

	// Decide calls by datagram (see roundTrip).
	callMu    sync.Mutex
	calls     *wire.DatagramCodec // ChanCall encoder: full frames
	replies   *wire.DatagramCodec // ChanReply decoder
	callBuf   []byte
	dgCalls   map[uint64]chan *wire.Envelope
	sendSlots chan struct{}
}

func newSession(ctx context.Context, c *Client, conn *quic.Conn) (*session, error) {
	s := &session{c: c, conn: conn, dgCalls: map[uint64]chan *wire.Envelope{}, sendSlots: make(chan struct{}, 8)}
	var err error
	if s.calls, err = wire.NewDatagramCodec(codec.ModeAck, codec.WithLevel(1)); err != nil {
		return nil, err
	}
	if s.replies, err = wire.NewDatagramCodec(codec.ModeAck); err != nil {
		return nil, err
	}
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the hello stream: %w", asServerError(err))
	}
	cs, err := s.newCallStream(str)
	if err != nil {
		return nil, err
	}
	hello := &wire.Envelope{Body: &wire.Envelope_Hello{Hello: &wire.Hello{Version: wire.ProtocolVersion, Token: c.cfg.Token}}}
	if err := cs.fw.Write(hello); err != nil {
		return nil, fmt.Errorf("sending hello: %w", asServerError(err))
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = str.SetReadDeadline(dl)
	}
	var env wire.Envelope
	if err := cs.fr.Read(&env); err != nil {
		// An agent that refuses closes the connection with a code; prefer it.
		if cerr := context.Cause(conn.Context()); cerr != nil {
			err = cerr
		}
		return nil, fmt.Errorf("reading hello answer: %w", asServerError(err))
	}
	_ = str.SetReadDeadline(time.Time{})
	switch b := env.GetBody().(type) {
	case *wire.Envelope_HelloOk:
	case *wire.Envelope_Error:
		return nil, serverError(b.Error)
	default:
		return nil, fmt.Errorf("%w: hello answered with %T", wire.ErrMalformed, b)
	}
	s.streams = append(s.streams, cs)
	go cs.readLoop()
	for i := 1; i < c.cfg.Streams; i++ {
		str, err := conn.OpenStream()
		if err != nil {
			break // the agent allows fewer streams: use what we have
		}
		cs, err := s.newCallStream(str)
		if err != nil {
			return nil, err
		}
		s.streams = append(s.streams, cs)
		go cs.readLoop()
	}
	go s.readDatagrams()
	go func() {
		<-conn.Context().Done()
		s.dead.Store(true)
	}()
	return s, nil
}

func (s *session) alive() bool { return !s.dead.Load() && s.conn.Context().Err() == nil }

func (s *session) close(code wire.Code, reason string) {
	s.dead.Store(true)
	s.conn.CloseWithError(quic.ApplicationErrorCode(code), reason)
}

// roundTrip sends req on one of the decide streams (round robin) and waits
// for the answer with the same id. Two optional fallbacks send the same
// request again while it waits, and the first answer wins (the agent answers
// every copy; decisions are the same for the same state):
//
//   - HedgeAfter: again on the next stream (MaxHedges times, each wait twice
//     the last), for a stream stuck behind a slow request;
//   - DatagramAfter: as a QUIC datagram, repeated every datagramRetry. On a
//     very lossy path QUIC's retransmission of stream data backs off
//     exponentially; a datagram is sent afresh each time, and the agent
//     answers by datagram. At 80% loss each way one copy in 25 makes the
//     round trip, so the copies must be frequent. Only for requests that fit
//     one datagram.
func (s *session) roundTrip(ctx context.Context, req *wire.Envelope, id uint64) (*wire.Envelope, error) {
	cfg := &s.c.cfg
	ch := make(chan *wire.Envelope, cfg.MaxHedges+2)
	var used []*callStream
	dgRegistered := false
	defer func() {
		for _, cs := range used {
			cs.forget(id)
		}
		if dgRegistered {
			s.forgetDatagramCall(id)
		}
	}()
	send := func() error {
		cs := s.streams[int(s.next.Add(1))%len(s.streams)]
		used = append(used, cs)
		return cs.send(req, id, ch)
	}
	if err := send(); err != nil {
		return nil, err
	}
	var hedgeC, dgC <-chan time.Time
	hedgeWait, dgWait, hedges := cfg.HedgeAfter, cfg.DatagramAfter, 0
	if hedgeWait > 0 {
		t := time.NewTimer(hedgeWait)
		defer t.Stop()
		hedgeC = t.C
	}
	var dgTimer *time.Timer
	if dgWait > 0 && s.conn.ConnectionState().SupportsDatagrams.Remote && req.GetDecideRequest() != nil {
		dgTimer = time.NewTimer(dgWait)
		defer dgTimer.Stop()
		dgC = dgTimer.C
	}
	for {
		select {
		case env := <-ch:
			return answer(env, used)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-hedgeC:
			hedges++
			_ = send() // a failed hedge leaves the first copy in flight
			if hedges < cfg.MaxHedges {
				hedgeWait *= 2
				hedgeC = time.After(hedgeWait)
			} else {
				hedgeC = nil
			}
		case <-dgC:
			if !s.sendDatagramCall(req, id, ch, &dgRegistered) {
				dgC = nil // does not fit a datagram: streams only
				continue
			}
			dgTimer.Reset(datagramRetry)
		}
	}
}

// sendDatagramCall sends req as one ChanCall datagram, registering ch for
// the reply the first time. It reports false when req does not fit.
func (s *session) sendDatagramCall(req *wire.Envelope, id uint64, ch chan *wire.Envelope, registered *bool) bool {
	s.callMu.Lock()
	var err error
	s.callBuf, _, err = s.calls.Encode(wire.ChanCall, req, s.callBuf[:0])
	b := append([]byte(nil), s.callBuf...)
	if !*registered && err == nil && len(b) <= wire.MaxDatagram {
		s.dgCalls[id] = ch
		*registered = true
	}
	s.callMu.Unlock()
	if err != nil || len(b) > wire.MaxDatagram {
		return false
	}
	select {
	case s.sendSlots <- struct{}{}:
		// SendDatagram blocks while the congestion window is full.
		go func() {
			defer func() { <-s.sendSlots }()
			_ = s.conn.SendDatagram(b)
		}()
	default: // enough copies already waiting to go out
	}
	return true
}

func (s *session) forgetDatagramCall(id uint64) {
	s.callMu.Lock()
	delete(s.dgCalls, id)
	s.callMu.Unlock()
}

// deliverReply matches a ChanReply datagram to its waiting call.
func (s *session) deliverReply(frame []byte) {
	env := new(wire.Envelope)
	s.callMu.Lock()
	_, err := s.replies.Decode(frame, env)
	var ch chan *wire.Envelope
	if err == nil {
		id, _ := replyID(env) // ids start at 1: no call waits on 0
		ch = s.dgCalls[id]
		delete(s.dgCalls, id)
	}
	s.callMu.Unlock()
	if ch != nil {
		select {
		case ch <- env:
		default:
		}
	}
}

// replyID is the request id of an answer (to a decide, outcomes or local
// report call, or an Error about one), and whether env is an answer at all.
func replyID(env *wire.Envelope) (uint64, bool) {
	switch b := env.GetBody().(type) {
	case *wire.Envelope_DecideResponse:
		return b.DecideResponse.GetReqId(), true
	case *wire.Envelope_OutcomeAccepted:
		return b.OutcomeAccepted.GetReqId(), true
	case *wire.Envelope_LocalAccepted:
		return b.LocalAccepted.GetReqId(), true
	case *wire.Envelope_Error:
		return b.Error.GetReqId(), true
	}
	return 0, false
}

// answer turns a nil (the stream failed) into that stream's error.
func answer(env *wire.Envelope, used []*callStream) (*wire.Envelope, error) {
	if env != nil {
		return env, nil
	}
	for _, cs := range used {
		cs.pmu.Lock()
		err := cs.err
		cs.pmu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return nil, errSessionDead
}

func (s *session) readDatagrams() {
	wire.ReadDatagrams(s.c.ctx, s.conn, func(ch wire.Channel, frame []byte) {
		switch ch {
		case wire.ChanState:
			s.dgMu.Lock()
			f := s.dgSub
			s.dgMu.Unlock()
			if f != nil {
				f(frame)
			}
		case wire.ChanReply:
			s.deliverReply(frame)
		}
	})
}

// callStream is one pipelined decide stream: writes are serialised (they
// share the stream's codec state), answers are matched to callers by id.
type callStream struct {
	s   *session
	str *quic.Stream
	fr  *wire.FrameReader

	wmu sync.Mutex
	fw  *wire.FrameWriter

	pmu     sync.Mutex
	pending map[uint64]chan *wire.Envelope
	err     error // set once the stream failed; later calls fail at once
}

func (s *session) newCallStream(str *quic.Stream) (*callStream, error) {
	fr, err := wire.NewFrameReader(str, s.c.cfg.MaxFrameBytes)
	if err != nil {
		return nil, err
	}
	fw, err := wire.NewFrameWriter(str, s.c.codecOpts()...)
	if err != nil {
		return nil, err
	}
	return &callStream{s: s, str: str, fr: fr, fw: fw, pending: map[uint64]chan *wire.Envelope{}}, nil
}

// send registers ch for id and writes req.
func (cs *callStream) send(req *wire.Envelope, id uint64, ch chan *wire.Envelope) error {
	cs.pmu.Lock()
	if cs.err != nil {
		err := cs.err
		cs.pmu.Unlock()
		return err
	}
	cs.pending[id] = ch
	cs.pmu.Unlock()

	cs.wmu.Lock()
	err := cs.fw.Write(req)
	cs.wmu.Unlock()
	if err != nil {
		cs.forget(id)
		err = fmt.Errorf("%w: %w", errSessionDead, asServerError(err))
		cs.fail(err)
		return err
	}
	return nil
}

func (cs *callStream) forget(id uint64) {
	cs.pmu.Lock()
	delete(cs.pending, id)
	cs.pmu.Unlock()
}

// fail ends the stream: pending calls get err, and the session is marked
// dead so that the next call reconnects.
func (cs *callStream) fail(err error) {
	cs.pmu.Lock()
	if cs.err == nil {
		cs.err = err
		for id, ch := range cs.pending {
			select {
			case ch <- nil: // wakes the caller, who reads cs.err
			default:
			}
			delete(cs.pending, id)
		}
	}
	cs.pmu.Unlock()
	cs.s.dead.Store(true)
}

func (cs *callStream) readLoop() {
	for {
		env := new(wire.Envelope)
		if err := cs.fr.Read(env); err != nil {
			if cerr := context.Cause(cs.s.conn.Context()); cerr != nil {
				err = cerr
			}
			cs.fail(fmt.Errorf("%w: %w", errSessionDead, asServerError(err)))
			return
		}
		id, ok := replyID(env)
		if !ok {
			continue
		}
		if e := env.GetError(); e != nil && id == 0 {
			// A stream-level error: the agent is closing this stream.
			cs.fail(fmt.Errorf("%w: %w", errSessionDead, serverError(e)))
			return
		}
		cs.pmu.Lock()
		ch := cs.pending[id]
		delete(cs.pending, id)
		cs.pmu.Unlock()
		if ch != nil {
			select {
			case ch <- env:
			default: // a hedged call already has its answer
			}
		}
	}
}
