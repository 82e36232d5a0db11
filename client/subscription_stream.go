package client

import (
	"context"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/wire"
)

// openSubscription opens a stream on s and sends sub on it: the one setup
// of node-state (Subscribe) and decision-table (local decisions)
// subscriptions. Reading the stream is cancelled when ctx ends, so that a
// reader blocked in fr.Read returns; release closes the stream and must be
// called once the subscription ends.
func (c *Client) openSubscription(ctx context.Context, s *session, sub *wire.Subscribe) (fr *wire.FrameReader, release func(), err error) {
	str, err := s.conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, nil, asServerError(err)
	}
	closeStream := func() {
		str.Close()
		str.CancelRead(quic.StreamErrorCode(wire.CodeOK))
	}
	fw, err := wire.NewFrameWriter(str, c.codecOpts()...)
	if err == nil {
		fr, err = wire.NewFrameReader(str, c.cfg.MaxFrameBytes)
	}
	if err != nil {
		closeStream()
		return nil, nil, err
	}
	if err := fw.Write(&wire.Envelope{Body: &wire.Envelope_Subscribe{Subscribe: sub}}); err != nil {
		closeStream()
		return nil, nil, asServerError(err)
	}
	stop := context.AfterFunc(ctx, func() { str.CancelRead(quic.StreamErrorCode(wire.CodeOK)) })
	return fr, func() { stop(); closeStream() }, nil
}

// readSubscription hands each envelope of a subscription stream to got
// until the stream fails or the agent ends the subscription with an Error.
// got runs before the next read, so fr.LastFrame() describes its envelope.
func readSubscription(fr *wire.FrameReader, got func(*wire.Envelope)) error {
	for {
		env := new(wire.Envelope)
		if err := fr.Read(env); err != nil {
			return asServerError(err)
		}
		if e := env.GetError(); e != nil {
			return serverError(e)
		}
		got(env)
	}
}
