package client

import (
	"context"
	"errors"
	"time"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

// SubscribeOptions tune a subscription.
type SubscribeOptions struct {
	// MinInterval asks the agent to push at most this often (0: agent default).
	MinInterval time.Duration
	// AckRepeat is how often a datagram subscriber repeats its newest ack
	// (default 20ms).
	AckRepeat time.Duration
}

// Subscribe returns a channel of node-state snapshots, pushed by the agent
// on a stream (wire.SubscribeMode_SUBSCRIBE_MODE_STREAM: every new epoch, in
// order) or as QUIC datagrams (SUBSCRIBE_MODE_DATAGRAM: the newest state,
// with losses skipped). The subscription survives reconnects; the channel
// is closed when ctx ends or the Client closes. A slow reader loses the
// oldest snapshots, never blocks the connection.
func (c *Client) Subscribe(ctx context.Context, mode wire.SubscribeMode, opts ...SubscribeOptions) (<-chan *wire.NodeState, error) {
	var o SubscribeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.AckRepeat <= 0 {
		o.AckRepeat = 20 * time.Millisecond
	}
	if mode != wire.SubscribeMode_SUBSCRIBE_MODE_STREAM && mode != wire.SubscribeMode_SUBSCRIBE_MODE_DATAGRAM {
		return nil, errors.Join(ErrBadConfig, errors.New("unknown subscribe mode "+mode.String()))
	}
	if _, err := c.session(ctx); err != nil {
		return nil, err
	}
	out := make(chan *wire.NodeState, c.cfg.SubscribeQueue)
	go c.runSubscription(ctx, mode, o, out)
	return out, nil
}

func (c *Client) runSubscription(ctx context.Context, mode wire.SubscribeMode, o SubscribeOptions, out chan *wire.NodeState) {
	defer close(out)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	var lastEpoch uint64
	haveEpoch := false
	push := func(st *wire.NodeState) {
		// Datagrams may repeat a snapshot (the agent resends until acked).
		if haveEpoch && st.GetEpoch() == lastEpoch {
			return
		}
		haveEpoch, lastEpoch = true, st.GetEpoch()
		for {
			select {
			case out <- st:
				return
			default:
			}
			select { // full: drop the oldest
			case <-out:
			default:
			}
		}
	}
	for ctx.Err() == nil {
		s, err := c.session(ctx)
		if err != nil {
			continue // session() already waits out the backoff
		}
		if err := c.subscribeOnce(ctx, s, mode, o, push); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Debug("subscription interrupted; resubscribing", "err", err)
			s.dead.Store(true)
		}
	}
}

// subscribeOnce runs one subscription on one connection until it fails.
func (c *Client) subscribeOnce(ctx context.Context, s *session, mode wire.SubscribeMode, o SubscribeOptions, push func(*wire.NodeState)) error {
	fr, release, err := c.openSubscription(ctx, s, &wire.Subscribe{Mode: mode, MinIntervalMs: uint32(o.MinInterval / time.Millisecond)})
	if err != nil {
		return err
	}
	defer release()
	if mode == wire.SubscribeMode_SUBSCRIBE_MODE_DATAGRAM {
		return c.datagramLoop(ctx, s, o, fr, push)
	}
	return readSubscription(fr, func(env *wire.Envelope) {
		if st := env.GetNodeState(); st != nil {
			push(st)
		}
	})
}

// datagramLoop decodes node-state datagrams and acknowledges each by its
// payload hash (as a datagram: losing an ack only delays the agent's choice
// of a newer base). A datagram whose base this side lacks asks for a full
// frame with Ack{hash: 0}.
func (c *Client) datagramLoop(ctx context.Context, s *session, o SubscribeOptions, fr *wire.FrameReader, push func(*wire.NodeState)) error {
	dc, err := wire.NewDatagramCodec(codec.ModeAck)
	if err != nil {
		return err
	}
	ackc, err := wire.NewDatagramCodec(codec.ModeAck) // never acked: every ack is a full, self-contained frame
	if err != nil {
		return err
	}
	in := make(chan []byte, 64)
	s.dgMu.Lock()
	s.dgSub = func(b []byte) {
		select {
		case in <- b:
		default: // the decoder is behind: a later datagram carries newer state anyway
		}
	}
	s.dgMu.Unlock()
	defer func() {
		s.dgMu.Lock()
		s.dgSub = nil
		s.dgMu.Unlock()
	}()
	// The stream stays open for the subscription's life; its end (or an
	// Error on it) ends the subscription.
	streamErr := make(chan error, 1)
	go func() { streamErr <- readSubscription(fr, func(*wire.Envelope) {}) }()
	// Acks go out from their own goroutine through a one-slot mailbox that
	// keeps only the newest: SendDatagram blocks while QUIC's congestion
	// window is full (heavy loss), and the decoder must not stall behind it.
	ackSlot := make(chan uint64, 1)
	// The newest ack is also repeated every AckRepeat, Quake 3 style: a
	// steady trickle of client packets keeps acknowledgements flowing to the
	// agent's QUIC stack under heavy loss, where a client that only answers
	// what it receives lets both congestion controllers stall.
	go func() {
		var ackBuf []byte
		var last uint64
		have := false
		tick := time.NewTicker(o.AckRepeat)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.conn.Context().Done():
				return
			case last = <-ackSlot:
				have = true
			case <-tick.C:
				if !have {
					continue
				}
			}
			var err error
			ackBuf, _, err = ackc.Encode(wire.ChanAck, &wire.Envelope{Body: &wire.Envelope_Ack{Ack: &wire.Ack{Hash: last}}}, ackBuf[:0])
			if err == nil {
				_ = s.conn.SendDatagram(ackBuf)
			}
		}
	}()
	sendAck := func(hash uint64) {
		for {
			select {
			case ackSlot <- hash:
				return
			default:
			}
			select { // replace a pending older ack
			case <-ackSlot:
			default:
			}
		}
	}
	var env wire.Envelope
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-streamErr:
			return err
		case <-s.conn.Context().Done():
			return errSessionDead
		case b := <-in:
			hash, err := dc.Decode(b, &env)
			switch {
			case errors.Is(err, codec.ErrUnknownBase):
				sendAck(0)
				continue
			case err != nil:
				continue // corrupt or stale datagram: the next one will do
			}
			sendAck(hash)
			if st := env.GetNodeState(); st != nil {
				push(st)
			}
		}
	}
}
