package codec

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdOverAlloc is the slack zstd's fast copy loops want past the output;
// giving it keeps decoding on the fast path. The output is still bounded by
// the frame's length, checked before decoding.
const zstdOverAlloc = 32

// minBaseBuf is the smallest dictionary buffer a ring slot starts with.
const minBaseBuf = 4 << 10

// Decoder turns frames back into payloads, keeping the last payloads it
// decoded (by hash) as the bases of later D frames. Safe for concurrent use.
//
// Each ring slot owns a zstd decoder whose raw dictionary is a fixed buffer
// of baseBuf bytes with the payload stored right-aligned at its end. zstd
// addresses a dictionary from its end, so the encoder's dictionary (the bare
// payload) and this padded one resolve every offset to the same bytes, and
// replacing a slot's payload is a copy, not a new zstd dictionary (which
// would allocate on every frame). A hostile frame that reaches into the
// padding gets stale bytes and fails the payload hash.
type Decoder struct {
	mu      sync.Mutex
	o       options
	full    *zstd.Decoder
	ring    []decSlot
	next    int
	baseBuf int // length of every slot's dictionary buffer
	scratch []byte
}

type decSlot struct {
	used bool
	hash uint64
	n    int    // payload length; the payload is buf[len(buf)-n:]
	buf  []byte // dictionary buffer, len == Decoder.baseBuf once created
	zd   *zstd.Decoder
}

func (s *decSlot) payload() []byte { return s.buf[len(s.buf)-s.n:] }

// NewDecoder returns a Decoder; WithRing and WithMaxSize apply, the other
// options are ignored.
func NewDecoder(opts ...Option) (*Decoder, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	d := &Decoder{o: o, ring: make([]decSlot, o.ring)}
	if d.full, err = d.newZstd(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Decoder) newZstd(extra ...zstd.DOption) (*zstd.Decoder, error) {
	// Frames of over 1 KiB are single-segment (window = content size);
	// smaller ones declare a window of up to 2 KiB, and zstd clamps the
	// window to the memory limit: so the zstd limits are the payload limit,
	// at least 2 KiB. The exact bound is the output buffer's capacity
	// (WithDecodeAllCapLimit), which is the frame's checked length.
	limit := uint64(max(d.o.maxSize+zstdOverAlloc, 2*zstd.MinWindowSize))
	opts := append([]zstd.DOption{
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(limit),
		zstd.WithDecoderMaxWindow(limit),
		zstd.WithDecodeAllCapLimit(true),
		zstd.IgnoreChecksum(true),
		zstd.WithDecoderLowmem(true),
	}, extra...)
	zd, err := zstd.NewReader(nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating zstd decoder: %w", err)
	}
	return zd, nil
}

// DecodeAll checks and decodes one whole frame (no bytes before or after it)
// and appends the payload to dst. On error dst is returned unchanged and the
// ring is untouched, so a bad frame loses nothing.
func (d *Decoder) DecodeAll(frame, dst []byte) ([]byte, error) {
	h, err := ParseHeader(frame)
	if err != nil {
		return dst, err
	}
	if h.Length > d.o.maxSize {
		return dst, fmt.Errorf("%w: frame announces %d bytes, limit %d", ErrTooLarge, h.Length, d.o.maxSize)
	}
	if len(frame) != h.FrameLen() {
		return dst, fmt.Errorf("%w: frame is %d bytes, header says %d", ErrMalformed, len(frame), h.FrameLen())
	}
	body := frame[h.HeaderLen:]

	d.mu.Lock()
	defer d.mu.Unlock()
	zd := d.full
	if h.Kind == KindDelta {
		i := d.find(h.Base)
		if i < 0 {
			return dst, fmt.Errorf("%w: %#016x", ErrUnknownBase, h.Base)
		}
		zd = d.ring[i].zd
	}
	out, err := d.decodeBody(zd, body, h.Length)
	if err != nil {
		return dst, err
	}
	if got := Hash(out); got != h.Hash {
		return dst, fmt.Errorf("%w: payload hashes to %#016x, frame says %#016x", ErrChecksum, got, h.Hash)
	}
	if err := d.remember(out, h.Hash); err != nil {
		return dst, err
	}
	return append(dst, out...), nil
}

// decodeBody decodes into the scratch buffer, never past length bytes.
func (d *Decoder) decodeBody(zd *zstd.Decoder, body []byte, length int) ([]byte, error) {
	if length == 0 {
		return nil, nil // ParseHeader refused a body for an empty payload
	}
	if cap(d.scratch) < length+zstdOverAlloc {
		d.scratch = make([]byte, 0, length+zstdOverAlloc)
	}
	out, err := zd.DecodeAll(body, d.scratch[:0:length+zstdOverAlloc])
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded),
		errors.Is(err, zstd.ErrFrameSizeExceeded):
		return nil, fmt.Errorf("%w: body decodes past %d bytes: %v", ErrTooLarge, length, err)
	case err != nil:
		return nil, fmt.Errorf("%w: zstd body: %v", ErrMalformed, err)
	case len(out) > length:
		return nil, fmt.Errorf("%w: body decodes to %d bytes, header says %d", ErrTooLarge, len(out), length)
	case len(out) < length:
		return nil, fmt.Errorf("%w: body decodes to %d bytes, header says %d", ErrMalformed, len(out), length)
	}
	return out, nil
}

func (d *Decoder) find(hash uint64) int {
	for i := range d.ring {
		if d.ring[i].used && d.ring[i].hash == hash {
			return i
		}
	}
	return -1
}

// remember stores a decoded payload in the ring (oldest out) unless it is
// already there.
func (d *Decoder) remember(payload []byte, hash uint64) error {
	if d.find(hash) >= 0 {
		return nil
	}
	if len(payload) > d.baseBuf {
		if err := d.growBases(len(payload)); err != nil {
			return err
		}
	}
	s := &d.ring[d.next]
	if s.zd == nil {
		buf := make([]byte, d.baseBuf)
		zd, err := d.newZstd(zstd.WithDecoderDictRaw(0, buf))
		if err != nil {
			return err
		}
		s.buf, s.zd = buf, zd
	}
	s.used, s.hash, s.n = true, hash, len(payload)
	copy(s.buf[len(s.buf)-len(payload):], payload)
	d.next = (d.next + 1) % len(d.ring)
	return nil
}

// growBases enlarges every slot's dictionary buffer to hold n bytes,
// doubling so that a slowly growing payload reallocates O(log) times.
func (d *Decoder) growBases(n int) error {
	size := max(n, min(2*d.baseBuf, d.o.maxSize), minBaseBuf)
	for i := range d.ring {
		s := &d.ring[i]
		if s.zd == nil {
			continue
		}
		buf := make([]byte, size)
		copy(buf[size-s.n:], s.payload())
		if err := s.zd.ResetWithOptions(nil, zstd.WithDecoderDictRaw(0, buf)); err != nil {
			return fmt.Errorf("growing base buffer: %w", err)
		}
		s.buf = buf
	}
	d.baseBuf = size
	return nil
}

// Forget empties the ring, as after a reconnect: the next D frame gets
// ErrUnknownBase until a full frame arrives.
func (d *Decoder) Forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.ring {
		d.ring[i].used = false
	}
}
