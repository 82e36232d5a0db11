package codec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// twoFrames returns an F frame and a D frame against it, with their payloads.
func twoFrames(t *testing.T) (f, d, p1, p2 []byte) {
	t.Helper()
	snaps := counterSnapshots(7, 2, 200)
	e := mustEncoder(t)
	f, d = mustEncode(t, e, snaps[0]), mustEncode(t, e, snaps[1])
	if kindOf(t, f) != KindFull || kindOf(t, d) != KindDelta {
		t.Fatalf("setup: kinds %v %v, want F D", kindOf(t, f), kindOf(t, d))
	}
	return f, d, snaps[0], snaps[1]
}

// expectStillWorks checks that a decoder that refused a frame keeps its ring:
// the D frame after the F it holds still decodes.
func expectStillWorks(t *testing.T, dec *Decoder, d, p2 []byte) {
	t.Helper()
	out, err := dec.DecodeAll(d, nil)
	if err != nil || !bytes.Equal(out, p2) {
		t.Fatalf("after the refused frame the good D frame gives err %v, equal %v", err, bytes.Equal(out, p2))
	}
}

func primed(t *testing.T, f []byte, opts ...Option) *Decoder {
	t.Helper()
	dec := mustDecoder(t, opts...)
	if _, err := dec.DecodeAll(f, nil); err != nil {
		t.Fatalf("priming decoder: %v", err)
	}
	return dec
}

func TestUnknownBaseThenForceFull(t *testing.T) {
	snaps := counterSnapshots(8, 3, 100)
	e, dec := mustEncoder(t), mustDecoder(t)
	mustEncode(t, e, snaps[0]) // lost
	d := mustEncode(t, e, snaps[1])
	dst := []byte("untouched")
	got, err := dec.DecodeAll(d, dst)
	if !errorsIs(err, ErrUnknownBase) || string(got) != "untouched" {
		t.Fatalf("D frame without its base: %q, %v; want dst unchanged and ErrUnknownBase", got, err)
	}
	e.ForceFull()
	f := mustEncode(t, e, snaps[2])
	if kindOf(t, f) != KindFull {
		t.Fatalf("frame after ForceFull is %v, want F", kindOf(t, f))
	}
	if out, err := dec.DecodeAll(f, nil); err != nil || !bytes.Equal(out, snaps[2]) {
		t.Fatalf("full frame after ForceFull: %v", err)
	}
	dec.Forget()
	if _, err := dec.DecodeAll(mustEncode(t, e, snaps[0]), nil); !errorsIs(err, ErrUnknownBase) {
		t.Fatalf("D frame after Forget: %v, want ErrUnknownBase", err)
	}
}

func TestChecksumMismatch(t *testing.T) {
	f, d, _, p2 := twoFrames(t)
	dec := primed(t, f)

	wrongHash := bytes.Clone(d)
	wrongHash[9] ^= 1 // the payload hash starts at byte 9
	if _, err := dec.DecodeAll(wrongHash, nil); !errorsIs(err, ErrChecksum) {
		t.Errorf("wrong payload hash: %v, want ErrChecksum", err)
	}
	// A valid zstd body of a different payload of the same length.
	other := bytes.Clone(p2)
	other[len(other)/2] ^= 0x20
	h, _ := ParseHeader(d)
	z, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false))
	body := z.EncodeAll(other, nil)
	swapped := appendHeader(nil, Header{Kind: KindFull, Hash: h.Hash, Length: len(other), BodyLen: len(body)})
	if _, err := dec.DecodeAll(append(swapped, body...), nil); !errorsIs(err, ErrChecksum) {
		t.Errorf("body of another payload: %v, want ErrChecksum", err)
	}
	expectStillWorks(t, dec, d, p2)
}

func TestTooLarge(t *testing.T) {
	const limit = 64 << 10
	f, d, _, p2 := twoFrames(t)
	dec := primed(t, f, WithMaxSize(limit))

	// The header announces more than the limit: refused before any work.
	big := appendHeader(nil, Header{Kind: KindFull, Hash: 1, Length: limit + 1, BodyLen: 10})
	if _, err := dec.DecodeAll(append(big, make([]byte, 10)...), nil); !errorsIs(err, ErrTooLarge) {
		t.Errorf("announced %d > limit: %v, want ErrTooLarge", limit+1, err)
	}

	// zstd bombs: a few bytes of body that expand far past the announced
	// length, with and without zstd's own content size.
	zeros := make([]byte, 4<<20)
	z, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))
	withSize := z.EncodeAll(zeros, nil)
	var streamed bytes.Buffer
	z.Reset(&streamed)
	z.Write(zeros)
	z.Close()
	// A small window gets past zstd's window check, so only the output
	// bound stops it.
	zs, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(32<<10))
	var smallWindow bytes.Buffer
	zs.Reset(&smallWindow)
	zs.Write(zeros)
	zs.Close()
	for name, body := range map[string][]byte{"zstd content size": withSize, "no content size": streamed.Bytes(), "no content size, small window": smallWindow.Bytes()} {
		const announced = 2000
		if len(body) > maxBodyLen(announced) {
			t.Fatalf("%s: bomb body %d bytes does not fit a %d-byte frame", name, len(body), announced)
		}
		frame := append(appendHeader(nil, Header{Kind: KindFull, Hash: Hash(zeros[:announced]), Length: announced, BodyLen: len(body)}), body...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := dec.DecodeAll(frame, nil)
		runtime.ReadMemStats(&after)
		if !errorsIs(err, ErrTooLarge) {
			t.Errorf("%s: %v, want ErrTooLarge", name, err)
		}
		// Bounded: nowhere near the 4 MiB the body would expand to. zstd
		// may hold one block (128 KiB) of work beyond the output buffer.
		grew := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: refused after allocating %d bytes", name, grew)
		if grew > 512<<10 {
			t.Errorf("%s: decoding the bomb allocated %d bytes", name, grew)
		}
	}
	expectStillWorks(t, dec, d, p2)
}

func TestLyingLengths(t *testing.T) {
	f, d, _, p2 := twoFrames(t)
	dec := primed(t, f)
	h, _ := ParseHeader(d)
	body := d[h.HeaderLen:]
	rebuild := func(length, bodyLen int, body []byte) []byte {
		return append(appendHeader(nil, Header{Kind: h.Kind, Base: h.Base, Hash: h.Hash, Length: length, BodyLen: bodyLen}), body...)
	}
	tests := map[string]struct {
		frame []byte
		want  error
	}{
		"payload length too long":  {rebuild(h.Length+10, h.BodyLen, body), ErrMalformed},
		"payload length too short": {rebuild(h.Length-10, h.BodyLen, body), ErrTooLarge},
		"body length past the end": {rebuild(h.Length, h.BodyLen+5, body), ErrMalformed},
		"body length short":        {rebuild(h.Length, h.BodyLen-5, body), ErrMalformed},
		"trailing bytes":           {append(bytes.Clone(d), 0), ErrMalformed},
	}
	for name, tt := range tests {
		if _, err := dec.DecodeAll(tt.frame, nil); !errorsIs(err, tt.want) {
			t.Errorf("%s: %v, want %v", name, err, tt.want)
		}
	}
	expectStillWorks(t, dec, d, p2)
}

func TestTruncatedAndGarbageFrames(t *testing.T) {
	f, d, _, p2 := twoFrames(t)
	dec := primed(t, f)
	for n := 0; n < len(d); n++ {
		if _, err := dec.DecodeAll(d[:n], nil); !errorsIs(err, ErrMalformed) {
			t.Fatalf("frame cut to %d of %d bytes: %v, want ErrMalformed", n, len(d), err)
		}
	}
	rng := rand.New(rand.NewPCG(4, 4))
	h, _ := ParseHeader(d)
	for i := 0; i < 2000; i++ {
		var g []byte
		switch i % 3 {
		case 0: // pure noise
			g = randomPayload(rng, rng.IntN(200))
		case 1: // a valid header over a noise body
			g = append(bytes.Clone(d[:h.HeaderLen]), randomPayload(rng, h.BodyLen)...)
		default: // the D frame with a few bytes flipped
			g = bytes.Clone(d)
			for j := 0; j < 1+rng.IntN(4); j++ {
				g[rng.IntN(len(g))] ^= byte(1 + rng.IntN(255))
			}
		}
		out, err := dec.DecodeAll(g, nil)
		if err == nil && !bytes.Equal(out, p2) {
			t.Fatalf("garbage %d decoded without error to %d other bytes", i, len(out))
		}
	}
	// A corrupt zstd body that ParseHeader accepts is ErrMalformed.
	bad := append(bytes.Clone(d[:h.HeaderLen]), bytes.Repeat([]byte{0xff}, h.BodyLen)...)
	if _, err := dec.DecodeAll(bad, nil); !errorsIs(err, ErrMalformed) {
		t.Errorf("corrupt zstd body: %v, want ErrMalformed", err)
	}
	expectStillWorks(t, dec, d, p2)
}

func TestDecoderGrowsBases(t *testing.T) {
	// Payloads that grow past the slot buffers force them to be re-made;
	// bases already in the ring must survive that.
	rng := rand.New(rand.NewPCG(5, 5))
	var payloads [][]byte
	p := randomPayload(rng, 100)
	for i := 0; i < 12; i++ {
		p = append(bytes.Clone(p), randomPayload(rng, len(p)/2+1)...)
		payloads = append(payloads, p)
	}
	e, dec := mustEncoder(t, WithMode(ModeAck), WithRing(4)), mustDecoder(t, WithRing(4))
	frames := make([][]byte, len(payloads))
	for i, p := range payloads {
		frames[i] = mustEncode(t, e, p)
		if i == 0 {
			e.Ack(Hash(p)) // every later frame is a delta against the first
		}
	}
	for i, fr := range frames[:4] {
		out, err := dec.DecodeAll(fr, nil)
		if err != nil || !bytes.Equal(out, payloads[i]) {
			t.Fatalf("frame %d (%d bytes, %v): %v", i, len(payloads[i]), kindOf(t, fr), err)
		}
	}
	if kindOf(t, frames[3]) != KindDelta {
		t.Fatalf("frame 3 is %v, want a D against frame 0", kindOf(t, frames[3]))
	}
	binary.LittleEndian.PutUint64(frames[3][9:], 0) // sanity: a damaged copy still fails
	if _, err := dec.DecodeAll(frames[3], nil); !errorsIs(err, ErrChecksum) {
		t.Fatalf("damaged hash: %v", err)
	}
}
