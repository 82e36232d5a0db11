package codec

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cespare/xxhash/v2"
)

// Kind is the first byte of a frame.
type Kind byte

const (
	// KindFull: the body is zstd(payload).
	KindFull Kind = 'F'
	// KindDelta: the body is zstd(payload) with the base payload as a raw
	// dictionary.
	KindDelta Kind = 'D'
)

func (k Kind) String() string {
	switch k {
	case KindFull:
		return "F"
	case KindDelta:
		return "D"
	}
	return fmt.Sprintf("Kind(%#02x)", byte(k))
}

const (
	fixedHeaderLen = 1 + 8 + 8
	// MinHeaderLen is the size of the smallest header (both lengths < 128).
	MinHeaderLen = fixedHeaderLen + 2
	// MaxHeaderLen is the size of the largest header this package accepts:
	// lengths are at most MaxSizeLimit-bound, so each uvarint takes at most 5 bytes.
	MaxHeaderLen = fixedHeaderLen + 5 + 5
)

// Header is the parsed fixed part of a frame.
type Header struct {
	Kind      Kind
	Base      uint64 // xxhash64 of the base payload; 0 for KindFull
	Hash      uint64 // xxhash64 of the decoded payload
	Length    int    // decoded payload length
	BodyLen   int    // zstd body length
	HeaderLen int    // bytes before the body
}

// FrameLen is the size of the whole frame, header and body.
func (h Header) FrameLen() int { return h.HeaderLen + h.BodyLen }

// Hash is the xxhash64 of payload, the name of a payload in frames.
func Hash(payload []byte) uint64 { return xxhash.Sum64(payload) }

// maxBodyLen bounds the zstd body of an n-byte payload: zstd never needs more
// than the raw bytes plus 3 bytes per 128 KiB block plus an 18-byte frame
// header, so a body past this is a lie and is refused before any work.
func maxBodyLen(n int) int { return n + n>>7 + 64 }

// ParseHeader parses the header at the start of frame. It needs only the
// header bytes, so a stream reader can learn FrameLen from the first
// MaxHeaderLen bytes; a short input wraps io.ErrUnexpectedEOF as well as
// ErrMalformed. It does not apply the decoder's size limit.
func ParseHeader(frame []byte) (Header, error) {
	var h Header
	if len(frame) < fixedHeaderLen {
		return h, fmt.Errorf("%w: %d-byte header: %w", ErrMalformed, len(frame), io.ErrUnexpectedEOF)
	}
	h.Kind = Kind(frame[0])
	if h.Kind != KindFull && h.Kind != KindDelta {
		return h, fmt.Errorf("%w: kind byte %#02x", ErrMalformed, frame[0])
	}
	h.Base = binary.LittleEndian.Uint64(frame[1:9])
	h.Hash = binary.LittleEndian.Uint64(frame[9:17])
	if h.Kind == KindFull && h.Base != 0 {
		return h, fmt.Errorf("%w: full frame with base hash %#016x", ErrMalformed, h.Base)
	}
	off := fixedHeaderLen
	length, n, err := readLength(frame[off:], "payload length")
	if err != nil {
		return h, err
	}
	off += n
	bodyLen, n, err := readLength(frame[off:], "body length")
	if err != nil {
		return h, err
	}
	off += n
	h.Length, h.BodyLen, h.HeaderLen = length, bodyLen, off
	if bodyLen > maxBodyLen(length) {
		return h, fmt.Errorf("%w: body length %d for a %d-byte payload", ErrMalformed, bodyLen, length)
	}
	if length == 0 && bodyLen != 0 {
		return h, fmt.Errorf("%w: empty payload with a %d-byte body", ErrMalformed, bodyLen)
	}
	return h, nil
}

// readLength reads one uvarint length of at most 5 bytes and MaxSizeLimit+.
func readLength(b []byte, what string) (int, int, error) {
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, 0, fmt.Errorf("%w: %s: %w", ErrMalformed, what, io.ErrUnexpectedEOF)
	case n < 0 || n > 5 || v > 2*MaxSizeLimit:
		return 0, 0, fmt.Errorf("%w: %s overflows", ErrMalformed, what)
	}
	return int(v), n, nil
}

// appendHeader appends a frame header to dst.
func appendHeader(dst []byte, h Header) []byte {
	dst = append(dst, byte(h.Kind))
	dst = binary.LittleEndian.AppendUint64(dst, h.Base)
	dst = binary.LittleEndian.AppendUint64(dst, h.Hash)
	dst = binary.AppendUvarint(dst, uint64(h.Length))
	return binary.AppendUvarint(dst, uint64(h.BodyLen))
}
