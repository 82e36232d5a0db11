package wire

import "strconv"

// Code numbers the application errors of the native protocol. The same value
// is used as the QUIC stream error code (CancelRead/CancelWrite), the QUIC
// connection error code (CloseWithError) and Error.code in an Error message,
// so a peer that sees any one of them knows what went wrong.
type Code uint32

const (
	CodeOK                 Code = 0x0
	CodeMalformed          Code = 0x101 // not a frame, not a message, or a message out of place
	CodeFrameTooLarge      Code = 0x102 // length prefix beyond the frame limit
	CodeUnknownBase        Code = 0x103 // delta against a base the receiver does not hold
	CodeChecksum           Code = 0x104 // decoded payload does not match its hash
	CodeBodyTooLarge       Code = 0x105 // compressed body would expand past the limit
	CodeBatchTooLarge      Code = 0x106 // more tasks or outcomes than the limit
	CodeUnauthenticated    Code = 0x107 // missing or wrong token / certificate
	CodeTooManyConnections Code = 0x108 // connection limit (total or per client address)
	CodeInternal           Code = 0x109 // the backend failed
	CodeShutdown           Code = 0x10a // the agent is shutting down
	CodeUnsupported        Code = 0x10b // protocol version or mode not supported
	CodeIdle               Code = 0x10c // handshake (Hello) not sent in time
	CodeInvalidArgument    Code = 0x10d // a well-formed request with a bad field (a task id too long); per request
	CodeUnavailable        Code = 0x10e // the agent cannot answer yet (no node state); per request
)

var codeNames = map[Code]string{
	CodeOK:                 "ok",
	CodeMalformed:          "malformed",
	CodeFrameTooLarge:      "frame too large",
	CodeUnknownBase:        "unknown base",
	CodeChecksum:           "checksum mismatch",
	CodeBodyTooLarge:       "body too large",
	CodeBatchTooLarge:      "batch too large",
	CodeUnauthenticated:    "unauthenticated",
	CodeTooManyConnections: "too many connections",
	CodeInternal:           "internal error",
	CodeShutdown:           "shutting down",
	CodeUnsupported:        "unsupported",
	CodeIdle:               "hello timeout",
	CodeInvalidArgument:    "invalid argument",
	CodeUnavailable:        "unavailable",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "code 0x" + strconv.FormatUint(uint64(c), 16)
}

// ProtocolVersion is the version a client states in Hello.
const ProtocolVersion = 1

// ALPN names of the two protocols on the agent's UDP port.
const (
	ALPNNative = "triage/1"
	ALPNHTTP3  = "h3"
)
