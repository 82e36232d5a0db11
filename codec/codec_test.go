package codec

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestRoundTripCounterStream(t *testing.T) {
	snaps := counterSnapshots(1, 200, 300)
	raw := 0
	for _, s := range snaps {
		raw += len(s)
	}
	for _, lvl := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression} {
		wire, kinds := roundTrip(t, snaps, WithLevel(lvl))
		if kinds[0] != KindFull {
			t.Errorf("level %v: first frame is %v, want F", lvl, kinds[0])
		}
		for i, k := range kinds[1:] {
			if k != KindDelta {
				t.Errorf("level %v: frame %d is %v, want D", lvl, i+1, k)
			}
		}
		// Deltas of counters must beat compressing each snapshot alone by far.
		if saved := 1 - float64(wire)/float64(raw); saved < 0.90 {
			t.Errorf("level %v: wire %d of raw %d saves %.1f%%, want >= 90%%", lvl, wire, raw, 100*saved)
		}
	}
}

func TestRoundTripRandomPayloads(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	var payloads [][]byte
	var prev []byte
	for i := 0; i < 150; i++ {
		var p []byte
		switch rng.IntN(4) {
		case 0: // noise of any size, including empty
			p = randomPayload(rng, rng.IntN(20000))
		case 1: // a mutation of the previous payload
			p = bytes.Clone(prev)
			for j := 0; j < 5 && len(p) > 0; j++ {
				p[rng.IntN(len(p))] ^= byte(1 + rng.IntN(255))
			}
			p = append(p, randomPayload(rng, rng.IntN(64))...)
		case 2: // the previous payload again
			p = bytes.Clone(prev)
		default: // small
			p = randomPayload(rng, rng.IntN(40))
		}
		payloads = append(payloads, p)
		prev = p
	}
	for _, ring := range []int{1, 3, 8} {
		roundTrip(t, payloads, WithRing(ring))
	}
	// Ack mode with every frame acknowledged decodes the same way.
	e, d := mustEncoder(t, WithMode(ModeAck)), mustDecoder(t)
	for i, p := range payloads {
		f := mustEncode(t, e, p)
		out, err := d.DecodeAll(f, nil)
		if err != nil || !bytes.Equal(out, p) {
			t.Fatalf("ack mode frame %d: err %v, equal %v", i, err, bytes.Equal(out, p))
		}
		e.Ack(Hash(out))
	}
}

func TestRoundTripSampleMeetsTarget(t *testing.T) {
	recs := loadSample(t)
	raw, zstdOnly := 0, 0
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(DefaultLevel), zstd.WithEncoderCRC(false))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		raw += len(r)
		zstdOnly += len(z.EncodeAll(r, nil))
	}
	wire, _ := roundTrip(t, recs)
	saved := 1 - float64(wire)/float64(raw)
	t.Logf("%d procfs snapshots: raw %d, zstd alone %d (%.2f%% fewer), delta codec %d (%.2f%% fewer)",
		len(recs), raw, zstdOnly, 100*(1-float64(zstdOnly)/float64(raw)), wire, 100*saved)
	if saved < 0.97 {
		t.Errorf("delta codec saves %.2f%% of the raw bytes, target is at least 97%%", 100*saved)
	}
}

func TestEmptyAndDuplicatePayloads(t *testing.T) {
	s1 := bytes.Repeat([]byte("cpu 1234 5678 9012\n"), 20)
	s2 := bytes.Repeat([]byte("cpu 1240 5690 9015\n"), 20)
	payloads := [][]byte{{}, s1, s1, {}, nil, s2, s2}
	_, kinds := roundTrip(t, payloads)
	if kinds[2] != KindDelta {
		t.Errorf("a repeated payload is %v, want a D frame against its twin", kinds[2])
	}
	e := mustEncoder(t)
	f := mustEncode(t, e, nil)
	if h, _ := ParseHeader(f); h.BodyLen != 0 || h.Length != 0 || h.Hash != Hash(nil) {
		t.Errorf("empty payload header %+v, want no body and the hash of nothing", h)
	}
}

func TestEncodeAppendsToDst(t *testing.T) {
	e, d := mustEncoder(t), mustDecoder(t)
	prefix := []byte("keep me")
	f, err := e.EncodeAll([]byte("payload"), bytes.Clone(prefix))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(f, prefix) {
		t.Fatalf("EncodeAll overwrote dst: %q", f[:len(prefix)])
	}
	out, err := d.DecodeAll(f[len(prefix):], []byte("out:"))
	if err != nil || string(out) != "out:payload" {
		t.Fatalf("DecodeAll = %q, %v; want out:payload", out, err)
	}
}

func TestEncoderRefusesTooLarge(t *testing.T) {
	e := mustEncoder(t, WithMaxSize(100))
	dst := []byte("x")
	got, err := e.EncodeAll(make([]byte, 101), dst)
	if !errorsIs(err, ErrTooLarge) || len(got) != 1 {
		t.Fatalf("EncodeAll of 101 bytes with limit 100 = %d bytes, %v; want dst unchanged and ErrTooLarge", len(got), err)
	}
}

func TestInvalidOptions(t *testing.T) {
	bad := []Option{WithRing(0), WithRing(MaxRing + 1), WithMaxSize(0), WithMaxSize(MaxSizeLimit + 1),
		WithKeyframeInterval(-1), WithLevel(zstd.EncoderLevel(99)), WithMode(Mode(7))}
	for i, o := range bad {
		if _, err := NewEncoder(o); !errorsIs(err, ErrBadConfig) {
			t.Errorf("option %d: NewEncoder err = %v, want ErrBadConfig", i, err)
		}
		if _, err := NewDecoder(o); !errorsIs(err, ErrBadConfig) {
			t.Errorf("option %d: NewDecoder err = %v, want ErrBadConfig", i, err)
		}
	}
}

func TestStatsCount(t *testing.T) {
	e := mustEncoder(t)
	var wire int
	for _, p := range counterSnapshots(3, 5, 20) {
		wire += len(mustEncode(t, e, p))
	}
	s := e.Stats()
	if s.Frames != 5 || s.Full != 1 || s.Delta != 4 || s.WireBytes != uint64(wire) {
		t.Errorf("stats %+v, want 5 frames, 1 full, 4 delta, %d wire bytes", s, wire)
	}
}

// TestPayloadsAtTheLimit: payloads of exactly the max size, around zstd's
// 1 KiB minimum window and past its 128 KiB block, in F and D frames.
func TestPayloadsAtTheLimit(t *testing.T) {
	big := bytes.Join(counterSnapshots(16, 1, 12000), nil) // about 200 KB of counters
	for _, limit := range []int{1000, 1024, 1025, 2048, 4096, 200 << 10} {
		snaps := counterSnapshots(17, 4, limit/10+1)
		var payloads [][]byte
		for i, s := range snaps {
			p := append(bytes.Clone(big[:min(len(big), limit)]), s...)[:limit]
			if i == 3 {
				p = p[:limit-1]
			}
			payloads = append(payloads, p)
		}
		_, kinds := roundTrip(t, payloads, WithMaxSize(limit))
		if kinds[1] != KindDelta {
			t.Errorf("limit %d: second frame is %v, want D", limit, kinds[1])
		}
	}
}
