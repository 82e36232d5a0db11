package codec

import "fmt"

// Encoding against a kept base (EncodeAllKeyed).
//
// A delta frame costs zstd a dictionary build whenever its base differs
// from the one the delta encoder was last loaded with (ResetWithOptions
// hashes the whole base into fresh match tables); against the same base it
// only restores the table shards the last frame touched. In stream mode
// EncodeAll deltas against the newest payload, so every frame moves the
// base and pays a build. A sender whose frames are mostly re-statements of
// one payload with a field or two moved (a decision table re-dated by a
// heartbeat) names that payload the key, and its other frames delta
// against the key: a build per key, not per frame.
//
// The peer decodes every frame as before: in stream mode it holds every
// payload sent, and its ring evicts in the same order as the encoder's
// when both have the same size (WithRing says both ends must), so a key
// still in the encoder's ring is in the decoder's. A key that left the
// ring, or that a ForceFull may have made the peer lose, is not used.

// EncodeAllKeyed appends one frame carrying payload to dst, like
// EncodeAll, but in stream mode its delta is against the key, when there
// is one still in the ring, rather than against the newest payload. With
// rekey payload becomes the key of the frames after it. Without rekey the
// key stays (when there was none, the frame's base, or payload if the
// frame is full, becomes it), and when its base is already
// loaded zstd builds no dictionary. A full frame is sent when EncodeAll
// would send one (the first, a forced or periodic one) or is smaller. In
// ack mode it is EncodeAll.
func (e *Encoder) EncodeAllKeyed(payload, dst []byte, rekey bool) ([]byte, error) {
	if len(payload) > e.o.maxSize {
		return dst, fmt.Errorf("%w: %d-byte payload, limit %d", ErrTooLarge, len(payload), e.o.maxSize)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.o.mode != ModeStream {
		return e.encodeFrame(payload, dst, e.chooseBase())
	}
	base, k := e.chooseBase(), e.keySlot()
	if base >= 0 && k >= 0 {
		base = k
	}
	deltas := e.stats.Delta
	dst, err := e.encodeFrame(payload, dst, base)
	if err != nil {
		return dst, err
	}
	switch {
	case rekey:
		e.key, e.keyGen = e.lastSent, e.ring[e.lastSent].gen
	case k < 0 && e.stats.Delta > deltas:
		// No key, and a delta: its base, which the peer just used and zstd
		// has loaded, re-states the same content as well as the payload
		// would and costs no build on the next frame.
		e.key, e.keyGen = e.deltaSlot, e.deltaGen
	case k < 0:
		e.key, e.keyGen = e.lastSent, e.ring[e.lastSent].gen
	}
	return dst, nil
}

// keySlot is the ring slot of the key, or -1 when there is none or its
// slot now holds another payload.
func (e *Encoder) keySlot() int {
	if e.key < 0 || e.ring[e.key].gen != e.keyGen {
		return -1
	}
	return e.key
}
