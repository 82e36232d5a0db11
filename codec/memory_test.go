package codec

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryPerPeer bounds what one connection's Encoder and Decoder keep
// after a warm-up on the sample stream: the agent holds one pair per
// subscriber, so this is its memory per client. The bound follows the
// max size (zstd's buffers scale with the window, see zstdWindow).
func TestMemoryPerPeer(t *testing.T) {
	recs := loadSample(t)
	for _, tc := range []struct {
		maxSize int
		bound   uint64
	}{{64 << 10, 4 << 20}, {DefaultMaxSize, 24 << 20}} {
		before := heapInUse()
		e, d := mustEncoder(t, WithMaxSize(tc.maxSize)), mustDecoder(t, WithMaxSize(tc.maxSize))
		for _, r := range recs {
			f := mustEncode(t, e, r)
			if _, err := d.DecodeAll(f, nil); err != nil {
				t.Fatal(err)
			}
		}
		held := heapInUse() - before
		t.Logf("max size %d KiB: encoder and decoder hold %.1f MiB", tc.maxSize>>10, float64(held)/(1<<20))
		if held > tc.bound {
			t.Errorf("max size %d: %d bytes held, want at most %d", tc.maxSize, held, tc.bound)
		}
		runtime.KeepAlive(e)
		runtime.KeepAlive(d)
	}
}

// An Encoder holds what its payloads need, not what its max size allows:
// the agent keeps one per subscriber at the default max size, and node
// states are a few hundred bytes. Its window grew to the max size's before
// (a 2 MiB window, 2.1 MB of zstd history per encoder); the frames are the
// same either way (TestEncoderWindowFramesUnchanged).
func TestEncoderMemoryFollowsPayloads(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	payloads := make([][]byte, 200)
	for i := range payloads {
		payloads[i] = make([]byte, 300+rng.IntN(300))
		for j := range payloads[i] {
			payloads[i][j] = byte(rng.IntN(8))
		}
	}
	before := heapInUse()
	e := mustEncoder(t, WithMaxSize(DefaultMaxSize))
	for _, p := range payloads {
		mustEncode(t, e, p)
	}
	held := heapInUse() - before
	t.Logf("encoder of %d-byte max size after %d small payloads: %.2f MiB", DefaultMaxSize, len(payloads), float64(held)/(1<<20))
	const bound = 1 << 20
	if held > bound {
		t.Errorf("encoder holds %d bytes after small payloads, want at most %d", held, bound)
	}
	runtime.KeepAlive(e)
}

// A window that grows with the payloads gives the frames a window sized for
// the max size from the start gives, byte for byte: it always covers two
// payloads (or a base and a payload), so zstd finds the same matches.
func TestEncoderWindowFramesUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var payloads [][]byte
	for n := 100; n < 600<<10; n = n * 3 / 2 {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.IntN(16))
		}
		payloads = append(payloads, p, append(append([]byte(nil), p[:n/2]...), p...), p[:n/3])
	}
	for _, mode := range []Mode{ModeStream, ModeAck} {
		grown, fixed := mustEncoder(t, WithMode(mode)), mustEncoder(t, WithMode(mode))
		if err := fixed.fitWindow(DefaultMaxSize); err != nil {
			t.Fatal(err)
		}
		for i, p := range payloads {
			a, b := mustEncode(t, grown, p), mustEncode(t, fixed, p)
			if i == 0 && grown.window >= fixed.window {
				t.Errorf("mode %d: window %d after a %d-byte payload, want under the max size's %d", mode, grown.window, len(p), fixed.window)
			}
			if !bytes.Equal(a, b) {
				t.Fatalf("mode %d, payload %d (%d bytes): frames differ (%d and %d bytes)", mode, i, len(p), len(a), len(b))
			}
			if h, err := ParseHeader(a); err == nil && mode == ModeAck && i%2 == 0 {
				grown.Ack(h.Hash)
				fixed.Ack(h.Hash)
			}
		}
	}
}
