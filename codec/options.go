package codec

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// Defaults used when an option is not given (the zero value of each setting).
const (
	// DefaultLevel is zstd's fastest level: on deltas of counter snapshots
	// the higher levels save under 1% of the bytes and cost 2-3x the time
	// (docs/codec.md has the measurements).
	DefaultLevel            = zstd.SpeedFastest
	DefaultRing             = 8
	DefaultKeyframeInterval = 0 // never force a full frame on a count alone
	DefaultMaxSize          = 1 << 20
	// MaxSizeLimit bounds WithMaxSize so lengths always fit in an int32.
	MaxSizeLimit = 1 << 30
	// MaxRing bounds WithRing: lookups scan the ring linearly.
	MaxRing = 256
)

// Mode tells the Encoder which of its sent payloads the peer holds.
type Mode int

const (
	// ModeStream: a reliable, ordered transport; the peer holds every payload
	// sent, so the newest one is the base of the next frame.
	ModeStream Mode = iota
	// ModeAck: a lossy transport (datagrams); only payloads the peer
	// acknowledged (Encoder.Ack) are valid bases, Quake 3 style.
	ModeAck
)

func (m Mode) String() string {
	switch m {
	case ModeStream:
		return "stream"
	case ModeAck:
		return "ack"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Option configures an Encoder or a Decoder. Options that concern only one
// side (level, mode, keyframe interval) are accepted and ignored by the other,
// so both ends can be built from one option list.
type Option func(*options) error

type options struct {
	level            zstd.EncoderLevel
	ring             int
	keyframeInterval int
	maxSize          int
	mode             Mode
	noEntropy        bool
}

func buildOptions(opts []Option) (options, error) {
	o := options{level: DefaultLevel, ring: DefaultRing, keyframeInterval: DefaultKeyframeInterval, maxSize: DefaultMaxSize}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// WithLevel sets the zstd level of the encoder (default DefaultLevel).
func WithLevel(l zstd.EncoderLevel) Option {
	return func(o *options) error {
		if l < zstd.SpeedFastest || l > zstd.SpeedBestCompression {
			return fmt.Errorf("%w: zstd level %d", ErrBadConfig, int(l))
		}
		o.level = l
		return nil
	}
}

// WithRing sets how many recent payloads each side keeps as possible bases
// (default 8, 1..MaxRing). Both ends should use the same size: the decoder
// must hold every base the encoder may choose.
func WithRing(n int) Option {
	return countOption("ring size", n, MaxRing, func(o *options) *int { return &o.ring })
}

// WithKeyframeInterval makes every k-th frame a full frame (0, the default,
// forces none: a full frame is still sent when no base is usable).
func WithKeyframeInterval(k int) Option {
	return func(o *options) error {
		if k < 0 {
			return fmt.Errorf("%w: keyframe interval %d", ErrBadConfig, k)
		}
		o.keyframeInterval = k
		return nil
	}
}

// WithMaxSize sets the largest payload accepted (default 1 MiB, at most
// MaxSizeLimit). The encoder refuses larger payloads and the decoder refuses
// frames that announce or decode to more, without allocating for them.
func WithMaxSize(n int) Option {
	return countOption("max size", n, MaxSizeLimit, func(o *options) *int { return &o.maxSize })
}

// countOption is the Option that sets *field(o) to n, a count that must lie
// in 1..limit (what names it in the error): the rule WithRing and
// WithMaxSize share.
func countOption(what string, n, limit int, field func(*options) *int) Option {
	return func(o *options) error {
		if n < 1 || n > limit {
			return fmt.Errorf("%w: %s %d not in 1..%d", ErrBadConfig, what, n, limit)
		}
		*field(o) = n
		return nil
	}
}

// WithoutLiteralEntropy makes the encoder store the literals of a body
// as they are, without trying Huffman coding on them (zstd's
// NoEntropyCompression); matches are found as before and the frames stay
// standard zstd that every decoder reads. On small protobuf payloads
// (decide calls and answers) the Huffman table costs more than it saves,
// so zstd tries it and throws it away: the same bytes come out about twice
// as fast. Encoder only.
func WithoutLiteralEntropy() Option {
	return func(o *options) error {
		o.noEntropy = true
		return nil
	}
}

// WithMode selects stream mode (default) or ack mode for the encoder.
func WithMode(m Mode) Option {
	return func(o *options) error {
		if m != ModeStream && m != ModeAck {
			return fmt.Errorf("%w: mode %d", ErrBadConfig, int(m))
		}
		o.mode = m
		return nil
	}
}

// zstdWindow is the encoder window for payloads of at most maxSize bytes. A
// delta's matches reach back through the payload into its base, so the
// window covers two payloads; zstd's buffers scale with it, which is why a
// tight WithMaxSize keeps an Encoder small.
func zstdWindow(maxSize int) int {
	w := zstd.MinWindowSize
	for w < 2*maxSize && w < zstd.MaxWindowSize {
		w <<= 1
	}
	return w
}
