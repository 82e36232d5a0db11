package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

// congestedWindow and congestedInterval pace snapshot datagrams on a path
// whose congestion window has collapsed (8 full packets or less).
const (
	congestedWindow   = 8 * 1252
	congestedInterval = 50 * time.Millisecond
)

// datagramSub is a connection's datagram-mode subscription. Its encoder is in
// codec ack mode: each snapshot is a delta against the newest snapshot the
// client acknowledged, so losing any number of datagrams never makes a later
// one undecodable (Quake 3's scheme). The server resends the current snapshot
// every tick until the client acknowledges it.
type datagramSub struct {
	mu        sync.Mutex
	dc        *wire.DatagramCodec
	ackedHash uint64 // hash the client acknowledged last
	sentHash  uint64 // hash of the current snapshot
}

func (nc *nativeConn) interval(sub *wire.Subscribe) time.Duration {
	d := nc.s.cfg.StateInterval
	if ms := sub.GetMinIntervalMs(); ms > 0 {
		d = time.Duration(ms) * time.Millisecond
	}
	return max(d, nc.s.cfg.MinSubscribeInterval)
}

// subscribe turns str into a subscription stream until the client finishes
// or resets it (or the connection ends).
func (nc *nativeConn) subscribe(str *quic.Stream, fr *wire.FrameReader, fw *wire.FrameWriter, sub *wire.Subscribe) {
	ctx, cancel := context.WithCancel(nc.conn.Context())
	defer cancel()
	switch sub.GetMode() {
	case wire.SubscribeMode_SUBSCRIBE_MODE_STREAM:
		if sw, ok := nc.startPush(ctx, cancel, str, fr, fw); ok {
			nc.pushStream(ctx, str, sw, nc.interval(sub))
		}
	case wire.SubscribeMode_SUBSCRIBE_MODE_DATAGRAM:
		if !nc.conn.ConnectionState().SupportsDatagrams.Remote {
			nc.failStream(str, fw, wire.CodeUnsupported, "datagram mode needs QUIC datagrams (RFC 9221), which this client did not enable")
			return
		}
		dc, err := wire.NewDatagramCodec(codec.ModeAck, wire.SnapshotOptions()...)
		if err != nil {
			nc.failStream(str, fw, wire.CodeInternal, err.Error())
			return
		}
		ds := &datagramSub{dc: dc}
		nc.dgMu.Lock()
		if nc.dg != nil {
			nc.dgMu.Unlock()
			nc.failStream(str, fw, wire.CodeUnsupported, "one datagram subscription per connection")
			return
		}
		nc.dg = ds
		nc.dgMu.Unlock()
		defer func() {
			nc.dgMu.Lock()
			nc.dg = nil
			nc.dgMu.Unlock()
		}()
		go nc.drainAcks(ctx, cancel, str, fr)
		nc.pushDatagrams(ctx, ds, nc.interval(sub))
		str.Close()
	case wire.SubscribeMode_SUBSCRIBE_MODE_TABLE:
		nc.subscribeTables(ctx, cancel, str, fr, fw, sub)
	default:
		nc.failStream(str, fw, wire.CodeUnsupported, fmt.Sprintf("subscribe mode %d", sub.GetMode()))
	}
}

// startPush readies str to push node states or decision tables: a fresh
// writer in delta mode (its first frame is full, the next ones deltas of
// the one before, so a push that changed little costs a few bytes), and
// the client's side read by drainAcks. It fails the stream when the writer
// cannot be made.
func (nc *nativeConn) startPush(ctx context.Context, cancel context.CancelFunc, str *quic.Stream, fr *wire.FrameReader, fw *wire.FrameWriter) (*wire.FrameWriter, bool) {
	sw, err := wire.NewFrameWriter(str, append(wire.SnapshotOptions(), codec.WithMaxSize(nc.s.cfg.MaxFrameBytes))...)
	if err != nil {
		nc.failStream(str, fw, wire.CodeInternal, err.Error())
		return nil, false
	}
	sw.Count = nc.s.stats.countFrame
	go nc.drainAcks(ctx, cancel, str, fr)
	return sw, true
}

// drainAcks reads the client's side of a subscription stream: Acks (for the
// datagram mode) until the client finishes, which ends the subscription.
func (nc *nativeConn) drainAcks(ctx context.Context, cancel context.CancelFunc, str *quic.Stream, fr *wire.FrameReader) {
	defer cancel()
	var env wire.Envelope
	for ctx.Err() == nil {
		err := fr.Read(&env)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				str.CancelRead(quic.StreamErrorCode(wire.CodeOf(err)))
			}
			return
		}
		if a := env.GetAck(); a != nil {
			nc.ack(a.GetHash())
		}
	}
}

// pushStream writes each new snapshot (by epoch) on the stream; the stream's
// codec state makes each a delta of the previous one.
func (nc *nativeConn) pushStream(ctx context.Context, str *quic.Stream, fw *wire.FrameWriter, every time.Duration) {
	var last uint64
	first := true
	pushEach(ctx, str, fw, every, func() *wire.Envelope {
		st := nc.s.backend.State()
		if st == nil || (!first && st.GetEpoch() == last) {
			return nil
		}
		first, last = false, st.GetEpoch()
		return &wire.Envelope{Body: &wire.Envelope_NodeState{NodeState: st}}
	})
}

// pushEach writes, once per tick, what next returns (nil: nothing new) on
// str until ctx ends, then finishes the stream; a write that fails resets
// it. Each write may wait 10 s for flow control.
func pushEach(ctx context.Context, str *quic.Stream, fw *wire.FrameWriter, every time.Duration, next func() *wire.Envelope) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if msg := next(); msg != nil && !writePush(str, fw, msg) {
			return
		}
		select {
		case <-ctx.Done():
			str.Close()
			return
		case <-t.C:
		}
	}
}

// writePush writes one pushed frame, waiting at most 10 s for flow
// control; a write that fails resets the stream and reports false.
func writePush(str *quic.Stream, fw *wire.FrameWriter, msg *wire.Envelope) bool {
	return pushWrite(str, func() error { return fw.Write(msg) })
}

// pushWrite runs write, one pushed frame on str, as writePush does.
func pushWrite(str *quic.Stream, write func() error) bool {
	_ = str.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := write(); err != nil {
		str.CancelWrite(quic.StreamErrorCode(wire.CodeInternal))
		return false
	}
	return true
}

// pushDatagrams sends the current snapshot every tick until the client has
// acknowledged it, then waits for a new epoch.
func (nc *nativeConn) pushDatagrams(ctx context.Context, ds *datagramSub, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	env := &wire.Envelope{}
	var buf []byte
	var lastSend time.Time
	for {
		// On a congested path (QUIC's window near its minimum, as under
		// heavy loss) send at most one snapshot per congestedInterval: a
		// datagram queued behind others is stale when it leaves, and it
		// delays the stream retransmissions and call replies behind it.
		congested := nc.conn.ConnectionStats().CongestionWindow < congestedWindow
		if congested && time.Since(lastSend) < congestedInterval {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		if st := nc.s.backend.State(); st != nil {
			env.Body = &wire.Envelope_NodeState{NodeState: st}
			ds.mu.Lock()
			var hash uint64
			var err error
			buf, hash, err = ds.dc.Encode(wire.ChanState, env, buf[:0])
			if err == nil && len(buf) > wire.MaxDatagram {
				// A delta should never be larger than the full frame, but a
				// snapshot can be too large either way: try full, then drop.
				ds.dc.Encoder().ForceFull()
				buf, hash, err = ds.dc.Encode(wire.ChanState, env, buf[:0])
			}
			send := err == nil && len(buf) <= wire.MaxDatagram && hash != ds.ackedHash
			ds.sentHash = hash
			ds.mu.Unlock()
			if err != nil || len(buf) > wire.MaxDatagram {
				nc.s.cfg.Logger.Warn("node state does not fit a datagram", "bytes", len(buf), "err", err)
			}
			if send {
				if err := nc.conn.SendDatagram(buf); err == nil {
					nc.s.stats.DatagramsSent.Add(1)
					nc.s.stats.countFrame(ds.dc.LastPayloadLen(), len(buf))
				}
				lastSend = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ack records a client acknowledgement; hash 0 asks for a full frame.
func (nc *nativeConn) ack(hash uint64) {
	nc.dgMu.Lock()
	ds := nc.dg
	nc.dgMu.Unlock()
	if ds == nil {
		return
	}
	nc.s.stats.DatagramsAcked.Add(1)
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if hash == 0 {
		ds.dc.Encoder().ForceFull()
		ds.ackedHash = 0
		return
	}
	ds.dc.Encoder().Ack(hash)
	ds.ackedHash = hash
}

// readDatagrams takes the client's datagrams: Acks of snapshots, and decide
// calls sent by datagram (the client's fallback when a stream call is slow
// on a lossy path), each answered by one datagram. Anything else is dropped
// (datagrams are unreliable by nature, so a bad one costs a log line at most).
func (nc *nativeConn) readDatagrams(ctx context.Context) {
	acks, err := wire.NewDatagramCodec(codec.ModeAck)
	if err != nil {
		return
	}
	calls, err := wire.NewDatagramCodec(codec.ModeAck)
	if err != nil {
		return
	}
	// Replies are full frames (an ack-mode encoder never acked), so each
	// stands alone whatever was lost before it.
	replies, err := wire.NewDatagramCodec(codec.ModeAck, codec.WithLevel(1))
	if err != nil {
		return
	}
	var env wire.Envelope
	var out []byte
	wire.ReadDatagrams(ctx, nc.conn, func(ch wire.Channel, frame []byte) {
		switch ch {
		case wire.ChanAck:
			if _, err := acks.Decode(frame, &env); err == nil && env.GetAck() != nil {
				nc.ack(env.GetAck().GetHash())
			}
		case wire.ChanCall:
			if _, err := calls.Decode(frame, &env); err != nil || env.GetDecideRequest() == nil {
				return
			}
			reply := nc.s.decide(ctx, env.GetDecideRequest())
			var err error
			out, _, err = replies.Encode(wire.ChanReply, reply, out[:0])
			if err == nil && len(out) > wire.MaxDatagram {
				out, _, err = replies.Encode(wire.ChanReply, errorEnvelope(wire.CodeFrameTooLarge, "answer does not fit a datagram: use a stream", env.GetDecideRequest().GetReqId()), out[:0])
			}
			if err != nil {
				return
			}
			select {
			case nc.replySlots <- struct{}{}:
				// SendDatagram blocks while the congestion window is full:
				// send from a goroutine, at most cap(replySlots) at once.
				go func(b []byte) {
					defer func() { <-nc.replySlots }()
					_ = nc.conn.SendDatagram(b)
				}(append([]byte(nil), out...))
			default: // too many replies in flight: the client will ask again
			}
		}
	})
}
