package wire

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/codec"
)

// Channel is the first byte of every native datagram: it says which codec
// state the frame after it belongs to, so each can keep its own ring.
type Channel byte

const (
	ChanState Channel = 'S' // agent → client: NodeState, delta against the last acked snapshot
	ChanAck   Channel = 'A' // client → agent: Ack of a snapshot (full frame)
	ChanCall  Channel = 'C' // client → agent: DecideRequest (full frame), the lossy-path fallback
	ChanReply Channel = 'R' // agent → client: DecideResponse or Error for a ChanCall (full frame)
)

// MaxDatagram is the most bytes a node-state datagram may take: the QUIC
// datagram payload that fits a 1280-byte path after QUIC's own headers, with
// a margin. The server drops, rather than fragments, a snapshot that does not
// fit even as a full frame.
const MaxDatagram = 1150

// DatagramCodec encodes or decodes Envelopes carried one per QUIC datagram.
// There is no length prefix: a datagram is its channel byte and one frame. The sender's encoder
// is in codec ack mode (bases are only payloads the peer acknowledged), so a
// lost datagram never makes a later one undecodable.
type DatagramCodec struct {
	enc     *codec.Encoder
	dec     *codec.Decoder
	payload []byte
	mo      proto.MarshalOptions
	uo      proto.UnmarshalOptions
}

// NewDatagramCodec builds one side's codec. mode is codec.ModeAck for
// node-state snapshots; acknowledgements (tiny, self-contained) use
// codec.ModeStream with no base ever needed because the first frame is full
// and the ring holds the rest.
func NewDatagramCodec(mode codec.Mode, opts ...codec.Option) (*DatagramCodec, error) {
	enc, err := codec.NewEncoder(append([]codec.Option{codec.WithMode(mode)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating datagram encoder: %w", err)
	}
	dec, err := codec.NewDecoder(append(opts, codec.WithMaxSize(DefaultMaxFrame))...)
	if err != nil {
		return nil, fmt.Errorf("creating datagram decoder: %w", err)
	}
	return &DatagramCodec{enc: enc, dec: dec, mo: proto.MarshalOptions{Deterministic: true}, uo: proto.UnmarshalOptions{DiscardUnknown: true}}, nil
}

// LastPayloadLen is the payload size of the last Encode or Decode.
func (d *DatagramCodec) LastPayloadLen() int { return len(d.payload) }

// Encoder exposes the encoder, for Ack and ForceFull.
func (d *DatagramCodec) Encoder() *codec.Encoder { return d.enc }

// Encode appends the channel byte and the frame of m to dst and returns it
// with the payload hash (what the peer will acknowledge). Not safe for
// concurrent use with itself.
func (d *DatagramCodec) Encode(ch Channel, m *Envelope, dst []byte) ([]byte, uint64, error) {
	var err error
	dst = append(dst, byte(ch))
	if d.payload, err = d.mo.MarshalAppend(d.payload[:0], m); err != nil {
		return dst, 0, fmt.Errorf("marshalling %T: %w", m.GetBody(), err)
	}
	out, err := d.enc.EncodeAll(d.payload, dst)
	if err != nil {
		return dst, 0, fmt.Errorf("encoding datagram: %w", err)
	}
	return out, codec.Hash(d.payload), nil
}

// SplitDatagram returns a datagram's channel and frame.
func SplitDatagram(datagram []byte) (Channel, []byte, error) {
	if len(datagram) < 1+codec.MinHeaderLen {
		return 0, nil, fmt.Errorf("%w: %d-byte datagram", ErrMalformed, len(datagram))
	}
	return Channel(datagram[0]), datagram[1:], nil
}

// DatagramReceiver is the one method of a QUIC connection (quic-go's
// *quic.Conn) that ReadDatagrams needs, so that wire imports no transport.
type DatagramReceiver interface {
	ReceiveDatagram(ctx context.Context) ([]byte, error)
}

// ReadDatagrams receives datagrams from conn until receiving fails (the
// connection closed or ctx ended) and hands each one's channel and frame to
// handle, in order, on the calling goroutine. A datagram too short to hold a
// frame is dropped without a word: datagrams are unreliable by nature, so
// one bad datagram must not end the read loop, and handle decides what a
// frame is worth (an unknown channel is simply not handled).
func ReadDatagrams(ctx context.Context, conn DatagramReceiver, handle func(ch Channel, frame []byte)) {
	for {
		b, err := conn.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		ch, frame, err := SplitDatagram(b)
		if err != nil {
			continue
		}
		handle(ch, frame)
	}
}

// Decode decodes one frame (a datagram without its channel byte, see
// SplitDatagram) into m and returns the payload hash to acknowledge. Not
// safe for concurrent use with itself.
func (d *DatagramCodec) Decode(frame []byte, m *Envelope) (uint64, error) {
	var err error
	if d.payload, err = d.dec.DecodeAll(frame, d.payload[:0]); err != nil {
		return 0, fmt.Errorf("decoding datagram: %w", err)
	}
	if err := unmarshalEnvelope(d.uo, d.payload, m); err != nil {
		return 0, err
	}
	return codec.Hash(d.payload), nil
}
