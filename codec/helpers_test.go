package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// counterSnapshots builds a deterministic stream of procfs-like text
// snapshots: named counters that grow by random amounts each step, the way
// /proc/vmstat and /proc/net/netstat do, with a few gauges that wander.
func counterSnapshots(seed uint64, count, counters int) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	vals := make([]uint64, counters)
	rates := make([]uint64, counters)
	for i := range vals {
		vals[i] = rng.Uint64N(1 << 40)
		if rng.IntN(3) > 0 { // a third of the counters never move
			rates[i] = 1 + rng.Uint64N(1<<uint(rng.IntN(20)))
		}
	}
	out := make([][]byte, count)
	var b bytes.Buffer
	for s := range out {
		b.Reset()
		for i := range vals {
			if rates[i] > 0 {
				vals[i] += rng.Uint64N(rates[i] + 1)
			}
			fmt.Fprintf(&b, "counter_%03d %d\n", i, vals[i])
		}
		out[s] = bytes.Clone(b.Bytes())
	}
	return out
}

// randomPayload is incompressible noise of n bytes.
func randomPayload(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

func mustEncoder(tb testing.TB, opts ...Option) *Encoder {
	tb.Helper()
	return mustBuild(tb, "NewEncoder", NewEncoder, opts)
}

func mustDecoder(tb testing.TB, opts ...Option) *Decoder {
	tb.Helper()
	return mustBuild(tb, "NewDecoder", NewDecoder, opts)
}

// mustBuild is what mustEncoder and mustDecoder share: build one side of
// the codec (named name in the failure) from opts; options it refuses end
// the test.
func mustBuild[T any](tb testing.TB, name string, build func(...Option) (T, error), opts []Option) T {
	tb.Helper()
	v, err := build(opts...)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return v
}

func mustEncode(tb testing.TB, e *Encoder, payload []byte) []byte {
	tb.Helper()
	f, err := e.EncodeAll(payload, nil)
	if err != nil {
		tb.Fatalf("EncodeAll: %v", err)
	}
	return f
}

func kindOf(tb testing.TB, frame []byte) Kind {
	tb.Helper()
	h, err := ParseHeader(frame)
	if err != nil {
		tb.Fatalf("ParseHeader of own frame: %v", err)
	}
	return h.Kind
}

// roundTrip encodes every payload, decodes each frame with a fresh decoder
// of the same options, checks the bytes, and returns the total wire size.
func roundTrip(tb testing.TB, payloads [][]byte, opts ...Option) (wire int, kinds []Kind) {
	tb.Helper()
	e, d := mustEncoder(tb, opts...), mustDecoder(tb, opts...)
	var out []byte
	for i, p := range payloads {
		f := mustEncode(tb, e, p)
		kinds = append(kinds, kindOf(tb, f))
		var err error
		out, err = d.DecodeAll(f, out[:0])
		if err != nil {
			tb.Fatalf("frame %d (%v): DecodeAll: %v", i, kinds[i], err)
		}
		if !bytes.Equal(out, p) {
			tb.Fatalf("frame %d (%v): decoded %d bytes differ from the %d-byte payload", i, kinds[i], len(out), len(p))
		}
		wire += len(f)
	}
	return wire, kinds
}
