package codec

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// deltaRetryFraction: when a D body is larger than payload/deltaRetryFraction
// the delta found little to reuse, so the encoder also tries F and sends the
// smaller. Trying F on every frame would double the cost of the common case,
// where D is many times smaller than anything F could reach.
const deltaRetryFraction = 4

// Encoder turns payloads into frames. It remembers the last payloads it sent
// (the ring) and, per Mode, which of them the peer holds. Safe for concurrent
// use: Ack may be called from a receiver goroutine while another encodes.
type Encoder struct {
	mu sync.Mutex
	o  options

	full  *zstd.Encoder // no dictionary
	delta *zstd.Encoder // dictionary = the payload in slot deltaSlot
	// window is the zstd window both were built with: the one the largest
	// payload (or base) so far needs, up to the one WithMaxSize allows
	// (fitWindow says why).
	window int
	// deltaSlot/deltaGen name the base loaded into delta; a changed
	// generation means the slot was overwritten and the dictionary is stale.
	deltaSlot int
	deltaGen  uint64

	ring     []encSlot
	next     int    // FIFO insert position
	gen      uint64 // insertion counter, names a slot's content
	sent     uint64 // send counter, orders slots by last send
	lastSent int    // slot of the newest payload sent, -1 before the first
	// key/keyGen name the base of EncodeAllKeyed's deltas (keyed.go); -1
	// before one is chosen.
	key       int
	keyGen    uint64
	sinceFull int // frames since the last F
	forceFull bool

	body, alt []byte
	sink      appendSink
	stats     EncoderStats
}

type encSlot struct {
	hash  uint64
	data  []byte
	gen   uint64 // 0: empty
	sent  uint64 // value of Encoder.sent when this payload was last sent
	acked bool
}

// EncoderStats counts what the encoder produced.
type EncoderStats struct {
	Frames, Full, Delta uint64
	// DictLoads counts delta frames whose base was not the one zstd was
	// loaded with: each cost a dictionary build (encodeDelta).
	DictLoads    uint64
	PayloadBytes uint64 // sum of payload lengths
	WireBytes    uint64 // sum of frame lengths, headers included
}

// NewEncoder returns an Encoder; see the With* options for the defaults.
func NewEncoder(opts ...Option) (*Encoder, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	e := &Encoder{o: o, deltaSlot: -1, ring: make([]encSlot, o.ring), lastSent: -1, key: -1}
	if err := e.fitWindow(initialWindowPayload); err != nil {
		return nil, err
	}
	return e, nil
}

// initialWindowPayload is the payload size a new Encoder's window is built
// for; the first larger payload rebuilds it (fitWindow).
const initialWindowPayload = 1 << 10

// fitWindow makes the zstd encoders' window fit payloads (and delta bases)
// of n bytes, rebuilding both when it is too small. zstd's history buffer
// is the window plus a block (a 2 MiB window held 2.1 MB per encoder), and
// an agent keeps one Encoder per subscriber: node-state snapshots are a few
// hundred bytes, so a window sized for WithMaxSize (1 MiB by default) made
// each subscriber cost 3.5 MB of heap for nothing (docs/footprint.md). The
// window grows by powers of two, so a stream rebuilds at most a few times,
// and always covers two payloads, as zstdWindow(maxSize) did: the frames
// are the same.
func (e *Encoder) fitWindow(n int) error {
	w := zstdWindow(min(n, e.o.maxSize))
	if w <= e.window {
		return nil
	}
	full, err := zstd.NewWriter(nil, zstdEncoderOptions(e.o, w)...)
	if err != nil {
		return fmt.Errorf("creating zstd encoder: %w", err)
	}
	// The delta encoder starts with an empty dictionary so that it is of the
	// dictionary kind from the start: ResetWithOptions can then swap bases
	// without rebuilding the encoder.
	delta, err := zstd.NewWriter(nil, append(zstdEncoderOptions(e.o, w), zstd.WithEncoderDictRaw(0, []byte{}))...)
	if err != nil {
		return fmt.Errorf("creating zstd delta encoder: %w", err)
	}
	e.full, e.delta, e.window, e.deltaSlot = full, delta, w, -1
	return nil
}

func zstdEncoderOptions(o options, window int) []zstd.EOption {
	return []zstd.EOption{
		zstd.WithEncoderLevel(o.level),
		zstd.WithEncoderConcurrency(1), // EncodeAll runs on the caller's goroutine
		zstd.WithEncoderCRC(false),     // the frame's payload hash is the check
		zstd.WithZeroFrames(false),
		zstd.WithWindowSize(window),
		zstd.WithLowerEncoderMem(true),
		zstd.WithNoEntropyCompression(o.noEntropy),
	}
}

// EncodeAll appends one frame carrying payload to dst and returns it. On
// error dst is returned unchanged.
func (e *Encoder) EncodeAll(payload, dst []byte) ([]byte, error) {
	if len(payload) > e.o.maxSize {
		return dst, fmt.Errorf("%w: %d-byte payload, limit %d", ErrTooLarge, len(payload), e.o.maxSize)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.encodeFrame(payload, dst, e.chooseBase())
}

// encodeFrame appends the frame of payload, a delta against ring slot base
// (-1: full), to dst, and records it as sent. e.mu is held.
func (e *Encoder) encodeFrame(payload, dst []byte, base int) ([]byte, error) {
	h := Header{Kind: KindFull, Hash: Hash(payload), Length: len(payload)}
	body, err := e.encodeBody(payload, &h, base)
	if err != nil {
		return dst, err
	}
	h.BodyLen = len(body)
	start := len(dst)
	dst = appendHeader(dst, h)
	dst = append(dst, body...)

	e.remember(payload, h.Hash)
	if h.Kind == KindFull {
		e.sinceFull = 0
		e.stats.Full++
	} else {
		e.sinceFull++
		e.stats.Delta++
	}
	e.forceFull = false
	e.stats.Frames++
	e.stats.PayloadBytes += uint64(len(payload))
	e.stats.WireBytes += uint64(len(dst) - start)
	return dst, nil
}

// encodeBody encodes payload against ring slot base (-1: a full frame),
// or as a full frame when that is smaller, sets h.Kind and h.Base, and
// returns the body (which aliases e.body or e.alt until the next call).
func (e *Encoder) encodeBody(payload []byte, h *Header, base int) ([]byte, error) {
	if len(payload) == 0 {
		return nil, nil // an empty payload needs no body, whatever the kind
	}
	need := len(payload)
	if base >= 0 {
		need = max(need, len(e.ring[base].data))
	}
	if err := e.fitWindow(need); err != nil {
		return nil, err
	}
	if base < 0 {
		e.body = e.full.EncodeAll(payload, e.body[:0])
		return e.body, nil
	}
	if err := e.encodeDelta(base, payload); err != nil {
		return nil, err
	}
	h.Kind, h.Base = KindDelta, e.ring[base].hash
	if len(e.body) > len(payload)/deltaRetryFraction {
		e.alt = e.full.EncodeAll(payload, e.alt[:0])
		if len(e.alt) <= len(e.body) {
			h.Kind, h.Base = KindFull, 0
			return e.alt, nil
		}
	}
	return e.body, nil
}

// chooseBase returns the ring slot to delta against, or -1 for a full frame.
func (e *Encoder) chooseBase() int {
	if e.forceFull || (e.o.keyframeInterval > 0 && e.sinceFull+1 >= e.o.keyframeInterval) {
		return -1
	}
	if e.o.mode == ModeStream {
		return e.lastSent
	}
	best := -1
	for i := range e.ring {
		s := &e.ring[i]
		if s.gen != 0 && s.acked && (best < 0 || s.sent > e.ring[best].sent) {
			best = i
		}
	}
	return best
}

// encodeDelta compresses payload against ring slot i into e.body.
//
// It goes through zstd's stream API on purpose. zstd builds hash tables
// from a dictionary each time the dictionary changes, and
// ResetWithOptions always builds them for the stream encoder; EncodeAll
// uses a second, pooled encoder that would build them again. A payload that
// fits one block (128 KiB) written and closed on the stream encoder is
// encoded exactly as EncodeAll would (one single-segment frame with the
// content size), so the base change costs one table build, not two. With an
// unchanged base (ack mode between acks) Reset only copies back the table
// shards the last frame touched.
func (e *Encoder) encodeDelta(i int, payload []byte) error {
	e.sink.b = e.body[:0]
	if e.deltaSlot == i && e.deltaGen == e.ring[i].gen {
		e.delta.ResetContentSize(&e.sink, int64(len(payload)))
	} else {
		// ID 0 keeps the dictionary ID out of the zstd frame header; the
		// frame's base hash already names the base.
		if err := e.delta.ResetWithOptions(&e.sink, zstd.WithEncoderDictRaw(0, e.ring[i].data)); err != nil {
			e.deltaSlot = -1
			return fmt.Errorf("loading delta base: %w", err)
		}
		e.deltaSlot, e.deltaGen = i, e.ring[i].gen
		e.stats.DictLoads++
		e.delta.ResetContentSize(&e.sink, int64(len(payload)))
	}
	if len(payload) > zstdBlockSize {
		// More than one block would make the stream API write a
		// multi-segment frame whose window can exceed what the decoder
		// accepts; EncodeAll writes a single segment whatever the size, at
		// the price of a second table build.
		e.body = e.delta.EncodeAll(payload, e.body[:0])
		return nil
	}
	if _, err := e.delta.Write(payload); err != nil {
		return fmt.Errorf("zstd delta: %w", err)
	}
	if err := e.delta.Close(); err != nil {
		return fmt.Errorf("zstd delta: %w", err)
	}
	e.body = e.sink.b
	e.sink.b = nil
	return nil
}

// zstdBlockSize is zstd's largest block, the size up to which the stream
// API encodes a payload exactly as EncodeAll does.
const zstdBlockSize = 128 << 10

// appendSink is the io.Writer the delta encoder writes its frame into.
type appendSink struct{ b []byte }

func (s *appendSink) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// remember records that payload was sent: it becomes the newest sent entry
// and, in stream mode, a base the peer holds.
func (e *Encoder) remember(payload []byte, hash uint64) {
	e.sent++
	i := e.find(hash)
	if i < 0 {
		i = e.next
		e.next = (e.next + 1) % len(e.ring)
		e.gen++
		s := &e.ring[i]
		s.hash, s.data, s.gen, s.acked = hash, append(s.data[:0], payload...), e.gen, false
	}
	e.ring[i].sent = e.sent
	e.lastSent = i
}

func (e *Encoder) find(hash uint64) int {
	for i := range e.ring {
		if e.ring[i].gen != 0 && e.ring[i].hash == hash {
			return i
		}
	}
	return -1
}

// Ack records that the peer holds the payload with this hash (ack mode:
// it becomes a valid base). Unknown hashes, e.g. acks that arrive after the
// payload left the ring, are ignored. In stream mode it has no effect.
func (e *Encoder) Ack(hash uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i := e.find(hash); i >= 0 {
		e.ring[i].acked = true
	}
}

// ForceFull makes the next frame a full frame and forgets which payloads the
// peer acknowledged: call it when the peer answered ErrUnknownBase or
// reconnected, since either way it lost its ring.
func (e *Encoder) ForceFull() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forceFull = true
	// The key too may be a payload the peer lost: EncodeAllKeyed must not
	// delta against it (the full frame becomes the key).
	e.key = -1
	for i := range e.ring {
		e.ring[i].acked = false
	}
}

// Stats returns the counters so far.
func (e *Encoder) Stats() EncoderStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}
