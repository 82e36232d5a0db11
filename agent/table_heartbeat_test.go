package agent

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"google.golang.org/protobuf/proto"

	"github.com/triage-agent/triage/codec"
	"github.com/triage-agent/triage/wire"
)

// tableFrames is a table subscription read frame by frame with a codec
// decoder of the client library's options, so that a test sees each
// frame's header (kind, base) as well as the table.
type tableFrames struct {
	str *quic.Stream
	r   *bufio.Reader
	dec *codec.Decoder
}

// tableFrame is one frame of a table subscription.
type tableFrame struct {
	h       codec.Header
	payload uint64 // hash of the decoded payload: the base a later frame names
	table   *wire.DecisionTable
	at      time.Time
}

// subscribeFrames opens a table subscription on conn whose frames dec
// decodes.
func subscribeFrames(t *testing.T, conn *quic.Conn, dec *codec.Decoder, sub *wire.Subscribe) *tableFrames {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := wire.NewFrameWriter(str)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(&wire.Envelope{Body: &wire.Envelope_Subscribe{Subscribe: sub}}); err != nil {
		t.Fatal(err)
	}
	return &tableFrames{str: str, r: bufio.NewReader(str), dec: dec}
}

// next reads and decodes the next frame, within 5 s.
func (f *tableFrames) next() (tableFrame, error) {
	_ = f.str.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := binary.ReadUvarint(f.r)
	if err != nil {
		return tableFrame{}, fmt.Errorf("reading a frame length: %w", err)
	}
	if n > wire.DefaultMaxFrame {
		return tableFrame{}, fmt.Errorf("frame of %d bytes", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(f.r, frame); err != nil {
		return tableFrame{}, fmt.Errorf("reading a frame: %w", err)
	}
	fr := tableFrame{at: time.Now()}
	if fr.h, err = codec.ParseHeader(frame); err != nil {
		return fr, fmt.Errorf("parsing a frame header: %w", err)
	}
	payload, err := f.dec.DecodeAll(frame, nil)
	if err != nil {
		return fr, fmt.Errorf("decoding a %v frame: %w", fr.h.Kind, err)
	}
	var env wire.Envelope
	if err := proto.Unmarshal(payload, &env); err != nil {
		return fr, fmt.Errorf("unmarshalling: %w", err)
	}
	if fr.table = env.GetDecisionTable(); fr.table == nil {
		return fr, fmt.Errorf("pushed %v, not a table", &env)
	}
	fr.payload = codec.Hash(payload)
	return fr, nil
}

func (f *tableFrames) mustNext(t *testing.T) tableFrame {
	t.Helper()
	fr, err := f.next()
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

func (f *tableFrames) close() {
	f.str.CancelRead(quic.StreamErrorCode(wire.CodeOK))
	f.str.Close()
}

// decisionsOf is what a client decides from in t: everything but age_us
// and queue_len (the client's queue estimate starts from queue_len, and a
// move within its row is not a change: docs/local-decisions.md, Pushes).
func decisionsOf(t *wire.DecisionTable) *wire.DecisionTable {
	c := proto.Clone(t).(*wire.DecisionTable)
	c.AgeUs, c.QueueLen = 0, 0
	return c
}

// Over real QUIC, a table that stands still is re-dated by heartbeats, a
// third of the bound apart, each a fresh age, the same decisions, and a
// delta against the last changed table (the encoder's key), not the
// previous heartbeat; a new epoch becomes the key of the heartbeats after
// it. Every frame decodes with the client library's decoder options.
func TestHeartbeatsAreDeltasOfTheLastChangedTable(t *testing.T) {
	ta := localAgent(t, Config{StateInterval: time.Hour})
	if _, err := ta.dial(t).DecideRemote(context.Background(), []*wire.Task{urgentTask(1)}); err != nil {
		t.Fatal(err)
	}
	const bound = 300 * time.Millisecond // a heartbeat every 100 ms
	sub := &wire.Subscribe{Mode: wire.SubscribeMode_SUBSCRIBE_MODE_TABLE, MinIntervalMs: 5, MaxStalenessMs: uint32(bound / time.Millisecond)}
	dec, err := codec.NewDecoder(codec.WithMaxSize(wire.DefaultMaxFrame))
	if err != nil {
		t.Fatal(err)
	}
	frames := subscribeFrames(t, dialRawStream(t, ta).conn, dec, sub)
	defer frames.close()
	key := frames.mustNext(t)
	if key.h.Kind != codec.KindFull {
		t.Fatalf("first table frame %v, want F", key.h.Kind)
	}
	for len(key.table.GetClasses()) == 0 { // the class asked about comes with a new epoch
		key = frames.mustNext(t)
	}

	// Heartbeats: fewer than the ring's 8, so the key stays in it.
	heartbeats := func(key tableFrame, n int) {
		t.Helper()
		prev := key
		for i := range n {
			hb := frames.mustNext(t)
			if row := wire.FindRow(hb.table.GetQueueEdges(), float32(hb.table.GetQueueLen())); row != wire.FindRow(key.table.GetQueueEdges(), float32(key.table.GetQueueLen())) {
				// The task asked about left the queue (a timeout): a
				// change, pushed at once, and the key from now on.
				key, prev = hb, hb
				continue
			}
			if hb.table.GetEpoch() != key.table.GetEpoch() {
				t.Fatalf("heartbeat %d: epoch %d, want the key's %d (nothing changed)", i, hb.table.GetEpoch(), key.table.GetEpoch())
			}
			if hb.h.Kind != codec.KindDelta || hb.h.Base != key.payload {
				t.Fatalf("heartbeat %d: %v frame on base %#x, want a delta on the last changed table %#x", i, hb.h.Kind, hb.h.Base, key.payload)
			}
			if !proto.Equal(decisionsOf(hb.table), decisionsOf(key.table)) {
				t.Fatalf("heartbeat %d carries other decisions than the table it re-dates", i)
			}
			// Re-dated: brought up to date within a refresh or two of
			// the push, however long the table has stood still.
			if age := time.Duration(hb.table.GetAgeUs()) * time.Microsecond; age > 50*time.Millisecond {
				t.Fatalf("heartbeat %d: age %v, want a refresh's", i, age)
			}
			if gap := hb.at.Sub(prev.at); gap < bound/6 || gap > bound {
				t.Fatalf("heartbeat %d came %v after the frame before, want about %v", i, gap, bound/3)
			}
			prev = hb
		}
	}
	heartbeats(key, 4)

	// A new epoch (a class asked about) is pushed and becomes the key.
	if _, err := ta.dial(t).DecideRemote(context.Background(), []*wire.Task{scoringTask(2)}); err != nil {
		t.Fatal(err)
	}
	changed := frames.mustNext(t)
	for changed.table.GetEpoch() == key.table.GetEpoch() {
		changed = frames.mustNext(t)
	}
	if len(changed.table.GetClasses()) != 2 {
		t.Fatalf("new epoch with %d classes, want 2", len(changed.table.GetClasses()))
	}
	heartbeats(changed, 3)
}

// A client whose decoder lost the key cannot read a heartbeat (it names
// the key, ErrUnknownBase, never a wrong table); subscribing again, it is
// sent a full frame first, and the heartbeats after it are deltas of that
// frame, which it holds.
func TestMissedBaseGetsAFullFrame(t *testing.T) {
	ta := localAgent(t, Config{StateInterval: time.Hour})
	sub := &wire.Subscribe{Mode: wire.SubscribeMode_SUBSCRIBE_MODE_TABLE, MinIntervalMs: 5, MaxStalenessMs: 150}
	dec, err := codec.NewDecoder(codec.WithMaxSize(wire.DefaultMaxFrame))
	if err != nil {
		t.Fatal(err)
	}
	conn := dialRawStream(t, ta).conn
	frames := subscribeFrames(t, conn, dec, sub)
	if first := frames.mustNext(t); first.h.Kind != codec.KindFull {
		t.Fatalf("first frame %v, want F", first.h.Kind)
	}
	frames.mustNext(t)
	dec.Forget()
	if _, err := frames.next(); !errors.Is(err, codec.ErrUnknownBase) {
		t.Fatalf("heartbeat to a decoder without its base: %v, want ErrUnknownBase", err)
	}
	frames.close()

	again := subscribeFrames(t, conn, dec, sub)
	defer again.close()
	first := again.mustNext(t)
	if first.h.Kind != codec.KindFull {
		t.Fatalf("first frame of the new subscription %v, want F", first.h.Kind)
	}
	for i := range 3 {
		if hb := again.mustNext(t); hb.h.Kind != codec.KindDelta || hb.h.Base != first.payload {
			t.Fatalf("heartbeat %d: %v on %#x, want a delta of the full frame %#x", i, hb.h.Kind, hb.h.Base, first.payload)
		}
	}
}
