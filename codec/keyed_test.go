package codec

import (
	"bytes"
	"fmt"
	"testing"
)

// redated is p with a short field near its start rewritten, the way a
// re-dated decision table differs from the one it re-dates (its age).
func redated(p []byte, age int) []byte {
	q := bytes.Clone(p)
	copy(q[12:], fmt.Sprintf("%08d", age))
	return q
}

// keyedStep encodes p with EncodeAllKeyed, decodes it with d and checks
// the bytes; it returns the frame's header.
func keyedStep(t *testing.T, e *Encoder, d *Decoder, p []byte, rekey bool) Header {
	t.Helper()
	f, err := e.EncodeAllKeyed(p, nil, rekey)
	if err != nil {
		t.Fatalf("EncodeAllKeyed: %v", err)
	}
	out, err := d.DecodeAll(f, nil)
	if err != nil {
		t.Fatalf("decoding a keyed frame: %v", err)
	}
	if !bytes.Equal(out, p) {
		t.Fatal("keyed frame decodes to other bytes")
	}
	h, _ := ParseHeader(f)
	return h
}

// Heartbeats delta against the key, not the previous frame, and cost no
// dictionary build once the key is loaded; a changed payload deltas
// against the key and becomes the next one. EncodeAll on the same
// sequence builds a dictionary for every delta.
func TestKeyedFramesKeepTheirBase(t *testing.T) {
	snaps := counterSnapshots(3, 2, 200)
	k1, k2 := snaps[0], snaps[1]
	e, d := mustEncoder(t), mustDecoder(t)
	if h := keyedStep(t, e, d, k1, true); h.Kind != KindFull {
		t.Fatalf("first frame %v, want F", h.Kind)
	}
	for i := range 5 {
		h := keyedStep(t, e, d, redated(k1, i), false)
		if h.Kind != KindDelta || h.Base != Hash(k1) {
			t.Fatalf("heartbeat %d: %v against %#x, want D against the key %#x", i, h.Kind, h.Base, Hash(k1))
		}
	}
	if got := e.Stats().DictLoads; got != 1 {
		t.Fatalf("%d dictionary builds for 5 heartbeats of one key, want 1", got)
	}
	if h := keyedStep(t, e, d, k2, true); h.Kind != KindDelta || h.Base != Hash(k1) {
		t.Fatalf("changed payload: %v against %#x, want D against the old key", h.Kind, h.Base)
	}
	for i := range 3 {
		if h := keyedStep(t, e, d, redated(k2, 10+i), false); h.Base != Hash(k2) {
			t.Fatalf("heartbeat %d after the rekey against %#x, want the new key %#x", i, h.Base, Hash(k2))
		}
	}
	keyed := e.Stats().DictLoads
	if keyed != 2 {
		t.Fatalf("%d dictionary builds for two keys, want 2", keyed)
	}

	plain := mustEncoder(t)
	for _, p := range [][]byte{k1, redated(k1, 0), redated(k1, 1), redated(k1, 2), redated(k1, 3), redated(k1, 4), k2, redated(k2, 10), redated(k2, 11), redated(k2, 12)} {
		mustEncode(t, plain, p)
	}
	if s := plain.Stats(); s.DictLoads != s.Delta || s.DictLoads <= keyed {
		t.Fatalf("EncodeAll: %d builds for %d deltas (keyed: %d); the comparison shows nothing", s.DictLoads, s.Delta, keyed)
	}
}

// A key that left the ring is not used: the frame after goes against the
// newest payload and becomes the key, and a decoder with the same ring
// decodes every frame.
func TestKeyedKeyLeavesTheRing(t *testing.T) {
	k := counterSnapshots(4, 1, 200)[0]
	e, d := mustEncoder(t, WithRing(4)), mustDecoder(t, WithRing(4))
	keyedStep(t, e, d, k, true)
	var prev []byte
	// Ring of 4: the key and three heartbeats fill it, the fourth
	// heartbeat (i 3) takes the key's slot after its encode, so i 4 finds
	// no key, goes against i 3 and makes it the key, and i 5..7 go
	// against it (i 7 then takes its slot): two dictionary builds in all.
	for i := range 8 {
		p := redated(k, i)
		h := keyedStep(t, e, d, p, false)
		switch {
		case i < 4 && h.Base != Hash(k):
			t.Fatalf("heartbeat %d against %#x while the key is in the ring", i, h.Base)
		case i == 4 && h.Base != Hash(prev):
			t.Fatalf("heartbeat %d, the key evicted: against %#x, want the newest payload %#x", i, h.Base, Hash(prev))
		case i > 4 && h.Base != Hash(redated(k, 3)):
			t.Fatalf("heartbeat %d against %#x, want the new key", i, h.Base)
		}
		prev = p
	}
	if got := e.Stats().DictLoads; got != 2 {
		t.Fatalf("%d dictionary builds, want 2 (the key, then heartbeat 3)", got)
	}
}

// After ForceFull (the peer lost its ring) the next frame is full and
// becomes the key: a heartbeat after it never names the old key, which
// the peer no longer holds.
func TestKeyedForceFull(t *testing.T) {
	snaps := counterSnapshots(5, 2, 200)
	e, d := mustEncoder(t), mustDecoder(t)
	keyedStep(t, e, d, snaps[0], true)
	keyedStep(t, e, d, redated(snaps[0], 1), false)
	d.Forget()
	e.ForceFull()
	if h := keyedStep(t, e, d, redated(snaps[0], 2), false); h.Kind != KindFull {
		t.Fatalf("frame after ForceFull %v, want F", h.Kind)
	}
	if h := keyedStep(t, e, d, redated(snaps[0], 3), false); h.Base != Hash(redated(snaps[0], 2)) {
		t.Fatalf("heartbeat after the full frame against %#x, want the full frame's payload", h.Base)
	}
}

// In ack mode the key plays no part: the frames are EncodeAll's.
func TestKeyedAckModeIsEncodeAll(t *testing.T) {
	snaps := counterSnapshots(6, 4, 100)
	a, b := mustEncoder(t, WithMode(ModeAck)), mustEncoder(t, WithMode(ModeAck))
	for i, p := range snaps {
		fa, err := a.EncodeAllKeyed(p, nil, i == 0)
		if err != nil {
			t.Fatal(err)
		}
		a.Ack(Hash(p))
		fb := mustEncode(t, b, p)
		b.Ack(Hash(p))
		if !bytes.Equal(fa, fb) {
			t.Fatalf("frame %d differs from EncodeAll's in ack mode", i)
		}
	}
}
