package codec

import (
	"testing"
)

// TestDecodeDoesNotAllocateAfterWarmup: once the ring's buffers have grown
// to the stream's largest payload, decoding D frames allocates nothing.
func TestDecodeDoesNotAllocateAfterWarmup(t *testing.T) {
	skipUnderRace(t)
	recs := loadSample(t)
	e, d := mustEncoder(t), mustDecoder(t)
	var frames [][]byte
	for pass := 0; pass < 2; pass++ {
		for _, r := range recs {
			frames = append(frames, mustEncode(t, e, r))
		}
	}
	out := make([]byte, 0, DefaultMaxSize)
	var err error
	for _, f := range frames[:len(recs)] { // warm-up pass
		if out, err = d.DecodeAll(f, out[:0]); err != nil {
			t.Fatal(err)
		}
	}
	next := len(recs)
	allocs := testing.AllocsPerRun(len(recs)-1, func() {
		out, err = d.DecodeAll(frames[next], out[:0])
		if err != nil {
			t.Fatalf("frame %d: %v", next, err)
		}
		next++
	})
	if allocs != 0 {
		t.Errorf("decoding a D frame allocates %.1f times after warm-up, want 0", allocs)
	}
}

// TestEncodeAllocations: against a base that is already loaded (ack mode,
// waiting for the next ack) encoding allocates nothing; when the base
// changes (stream mode, every frame) zstd allocates its new dictionary
// (WithEncoderDictRaw's closure and dict) and nothing else.
func TestEncodeAllocations(t *testing.T) {
	skipUnderRace(t)
	recs := loadSample(t)
	dst := make([]byte, 0, DefaultMaxSize)
	var err error
	for _, tc := range []struct {
		name string
		mode Mode
		max  float64
	}{{"ack mode, same base", ModeAck, 0}, {"stream mode, new base each frame", ModeStream, 2}} {
		// A ring that holds the whole sample keeps the one acked base.
		e := mustEncoder(t, WithMode(tc.mode), WithRing(MaxRing))
		for pass := 0; pass < 2; pass++ { // warm-up: grow every buffer to the largest payload
			for i, r := range recs {
				if dst, err = e.EncodeAll(r, dst[:0]); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					e.Ack(Hash(r))
				}
			}
		}
		i, deltas := 1, 0
		allocs := testing.AllocsPerRun(len(recs)-2, func() {
			if dst, err = e.EncodeAll(recs[i], dst[:0]); err != nil {
				t.Fatal(err)
			}
			if h, _ := ParseHeader(dst); h.Kind == KindDelta {
				deltas++
			}
			i++
		})
		if deltas != len(recs)-1 {
			t.Fatalf("%s: %d of %d frames were deltas, want all", tc.name, deltas, len(recs)-1)
		}
		t.Logf("%s: %.2f allocations per frame", tc.name, allocs)
		if allocs > tc.max {
			t.Errorf("%s: %.2f allocations per frame, want at most %v", tc.name, allocs, tc.max)
		}
	}
}

func skipUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own; allocation counts are checked without -race")
	}
}
