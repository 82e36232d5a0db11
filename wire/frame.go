package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/codec"
)

// Framing on a native stream: each message is
//
//	uvarint(len(frame)) | frame
//
// where frame is one delta-codec frame whose payload is one protobuf
// Envelope. The outer length lets a reader bound and skip a frame without
// parsing it; the codec frame inside carries its own hashes and lengths, and
// the two must agree. Each direction of a stream has its own codec state in
// stream mode: the previous payload is the base of the next, so repeated
// request shapes cost a few bytes.

// DefaultMaxFrame bounds a frame and its decoded payload unless told otherwise.
const DefaultMaxFrame = 1 << 20

// Framing errors; codec errors (codec.ErrUnknownBase, ErrChecksum,
// ErrTooLarge, ErrMalformed) pass through wrapped.
var (
	ErrFrameTooLarge = errors.New("wire: frame length beyond limit")
	ErrMalformed     = errors.New("wire: malformed message")
)

// CodeOf maps an error from FrameReader or a datagram decode to the code the
// peer is told.
func CodeOf(err error) Code {
	switch {
	case err == nil:
		return CodeOK
	case errors.Is(err, ErrFrameTooLarge):
		return CodeFrameTooLarge
	case errors.Is(err, codec.ErrUnknownBase):
		return CodeUnknownBase
	case errors.Is(err, codec.ErrChecksum):
		return CodeChecksum
	case errors.Is(err, codec.ErrTooLarge):
		return CodeBodyTooLarge
	}
	return CodeMalformed
}

// FrameWriter writes Envelopes to one stream. It is not safe for concurrent
// use; callers serialise writes (and so the codec state) themselves.
type FrameWriter struct {
	// Count, when set, is told the payload and on-the-wire size (length
	// prefix included) of every frame written, for byte metrics.
	Count func(payloadBytes, wireBytes int)

	w       io.Writer
	enc     *codec.Encoder // nil when pool lends one per frame
	pool    *EncoderPool
	payload []byte
	out     []byte
	mo      proto.MarshalOptions
}

// NewFrameWriter returns a writer in codec stream mode with the given options
// (codec.WithMaxSize should match the peer's frame limit).
func NewFrameWriter(w io.Writer, opts ...codec.Option) (*FrameWriter, error) {
	enc, err := codec.NewEncoder(append([]codec.Option{codec.WithMode(codec.ModeStream)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating frame encoder: %w", err)
	}
	return &FrameWriter{w: w, enc: enc, mo: proto.MarshalOptions{Deterministic: true}}, nil
}

// NewPooledFrameWriter returns a writer whose frames are all full frames,
// each encoded by an encoder borrowed from p: the writer itself keeps no
// codec state (a zstd encoder's tables are about 290 KiB), so the many
// streams of many connections share a few encoders. Its frames are the
// bytes a NewFrameWriter with p's options writes.
func NewPooledFrameWriter(w io.Writer, p *EncoderPool) *FrameWriter {
	return &FrameWriter{w: w, pool: p, mo: proto.MarshalOptions{Deterministic: true}}
}

// EncoderPool lends encoders whose every frame is full. A full frame
// depends on its payload alone, so any encoder of the pool writes the same
// bytes for it, whichever stream it serves.
type EncoderPool struct {
	opts []codec.Option
	pool sync.Pool
}

// NewEncoderPool returns a pool of encoders with opts and a key frame on
// every frame (codec.WithKeyframeInterval(1) is added).
func NewEncoderPool(opts ...codec.Option) (*EncoderPool, error) {
	opts = append(slices.Clone(opts), codec.WithKeyframeInterval(1))
	if _, err := codec.NewEncoder(opts...); err != nil {
		return nil, fmt.Errorf("creating frame encoder: %w", err)
	}
	return &EncoderPool{opts: opts}, nil
}

func (p *EncoderPool) get() (*codec.Encoder, error) {
	if e, ok := p.pool.Get().(*codec.Encoder); ok {
		return e, nil
	}
	e, err := codec.NewEncoder(p.opts...)
	if err != nil {
		return nil, fmt.Errorf("creating frame encoder: %w", err)
	}
	return e, nil
}

// Write marshals m, encodes it as one frame and writes length and frame in a
// single Write call, so one message is one stream write.
func (fw *FrameWriter) Write(m *Envelope) error { return fw.write(m, false, false) }

// WriteKeyed is Write with the frame a delta against the writer's key
// rather than the previous frame (codec.Encoder.EncodeAllKeyed); with
// rekey, m becomes the key. For a message that mostly re-states the key
// with a field or two moved (a re-dated decision table) it saves zstd's
// dictionary build on every frame but the rekeying ones' next. The peer
// reads the frames like any other. A pooled writer's frames are full
// either way.
func (fw *FrameWriter) WriteKeyed(m *Envelope, rekey bool) error { return fw.write(m, true, rekey) }

func (fw *FrameWriter) write(m *Envelope, keyed, rekey bool) error {
	var err error
	if fw.payload, err = fw.mo.MarshalAppend(fw.payload[:0], m); err != nil {
		return fmt.Errorf("marshalling %T: %w", m.GetBody(), err)
	}
	enc := fw.enc
	if fw.pool != nil {
		if enc, err = fw.pool.get(); err != nil {
			return err
		}
	}
	// Reserve the longest uvarint, encode behind it, then slide the prefix in.
	out := append(fw.out[:0], make([]byte, binary.MaxVarintLen32)...)
	if keyed {
		out, err = enc.EncodeAllKeyed(fw.payload, out, rekey)
	} else {
		out, err = enc.EncodeAll(fw.payload, out)
	}
	if fw.pool != nil {
		fw.pool.pool.Put(enc)
	}
	if err != nil {
		return fmt.Errorf("encoding frame: %w", err)
	}
	frameLen := len(out) - binary.MaxVarintLen32
	var pre [binary.MaxVarintLen32]byte
	n := binary.PutUvarint(pre[:], uint64(frameLen))
	start := binary.MaxVarintLen32 - n
	copy(out[start:], pre[:n])
	fw.out = out
	if _, err := fw.w.Write(out[start:]); err != nil {
		return fmt.Errorf("writing frame: %w", err)
	}
	if fw.Count != nil {
		fw.Count(len(fw.payload), len(out)-start)
	}
	return nil
}

// EncoderStats is the writer's codec counters (zero for a pooled writer,
// which keeps no codec state).
func (fw *FrameWriter) EncoderStats() codec.EncoderStats {
	if fw.enc == nil {
		return codec.EncoderStats{}
	}
	return fw.enc.Stats()
}

// FrameReader reads Envelopes from one stream.
type FrameReader struct {
	r        *bufio.Reader
	dec      *codec.Decoder
	maxFrame int
	frame    []byte
	payload  []byte
	uo       proto.UnmarshalOptions
}

// NewFrameReader returns a reader that refuses frames and payloads over
// maxFrame bytes (0 means DefaultMaxFrame) without allocating for them.
func NewFrameReader(r io.Reader, maxFrame int, opts ...codec.Option) (*FrameReader, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	dec, err := codec.NewDecoder(append(opts, codec.WithMaxSize(maxFrame))...)
	if err != nil {
		return nil, fmt.Errorf("creating frame decoder: %w", err)
	}
	return &FrameReader{r: bufio.NewReaderSize(r, 4096), dec: dec, maxFrame: maxFrame, uo: proto.UnmarshalOptions{DiscardUnknown: true}}, nil
}

// Read reads the next message into m (which it resets). io.EOF means the
// peer finished the stream cleanly between messages; a stream that ends
// inside a frame is ErrMalformed wrapping io.ErrUnexpectedEOF.
func (fr *FrameReader) Read(m *Envelope) error {
	n, err := binary.ReadUvarint(fr.r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.EOF
		}
		return fmt.Errorf("%w: length prefix: %w", ErrMalformed, err)
	}
	if n == 0 || n > uint64(fr.maxFrame)+codec.MaxHeaderLen {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, fr.maxFrame)
	}
	if cap(fr.frame) < int(n) {
		fr.frame = make([]byte, n)
	}
	fr.frame = fr.frame[:n]
	if _, err := io.ReadFull(fr.r, fr.frame); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%w: frame body (%d bytes announced): %w", ErrMalformed, n, err)
	}
	return fr.decode(fr.frame, m)
}

// LastFrame is the size of the last frame read (its length prefix not
// included) and its codec kind (full or delta): what a subscriber counts
// to know what its updates cost on the wire.
func (fr *FrameReader) LastFrame() (bytes int, kind codec.Kind) {
	if len(fr.frame) == 0 {
		return 0, 0
	}
	return len(fr.frame), codec.Kind(fr.frame[0])
}

func (fr *FrameReader) decode(frame []byte, m *Envelope) error {
	var err error
	if fr.payload, err = fr.dec.DecodeAll(frame, fr.payload[:0]); err != nil {
		return fmt.Errorf("decoding frame: %w", err)
	}
	return unmarshalEnvelope(fr.uo, fr.payload, m)
}

func unmarshalEnvelope(uo proto.UnmarshalOptions, payload []byte, m *Envelope) error {
	m.Reset()
	if err := uo.Unmarshal(payload, m); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if m.GetBody() == nil {
		return fmt.Errorf("%w: empty envelope", ErrMalformed)
	}
	return nil
}

// CallOptions are the codec options of decide and outcome streams: every
// frame full (zstd alone, fastest level, literals stored as they are).
// Requests carry different tasks each time, so a delta buys little there,
// and a patch-from delta costs tens of microseconds per frame against about
// one for a small full frame (docs/endpoint.md has the numbers); node-state
// snapshots, which change little from one to the next, use deltas
// (SnapshotOptions). Huffman-coding the literals of a decide call never
// paid on the payloads measured (docs/footprint.md) and took half the
// encoding time.
func CallOptions() []codec.Option {
	return []codec.Option{codec.WithLevel(1 /* zstd.SpeedFastest */), codec.WithKeyframeInterval(1), codec.WithoutLiteralEntropy()}
}

// SnapshotOptions are the codec options of node-state pushes (subscribe
// streams and datagrams): deltas against the previous (or acknowledged)
// snapshot at the fastest zstd level.
func SnapshotOptions() []codec.Option {
	return []codec.Option{codec.WithLevel(1 /* zstd.SpeedFastest */)}
}
