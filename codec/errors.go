package codec

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of them
// (test with errors.Is); the wrapping text names the detail.
var (
	// ErrUnknownBase: a D frame names a base payload the decoder does not
	// hold. The peer should answer with ForceFull.
	ErrUnknownBase = errors.New("codec: unknown base")
	// ErrChecksum: the decoded payload does not hash to the frame's payload hash.
	ErrChecksum = errors.New("codec: payload checksum mismatch")
	// ErrTooLarge: the payload is, or would decode to, more than the size limit.
	ErrTooLarge = errors.New("codec: payload too large")
	// ErrMalformed: the frame cannot be parsed (bad kind, truncated, lying
	// length, trailing bytes, corrupt zstd body).
	ErrMalformed = errors.New("codec: malformed frame")
	// ErrBadConfig: an option has an invalid value.
	ErrBadConfig = errors.New("codec: invalid option")
)
