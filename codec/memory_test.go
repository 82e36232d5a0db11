package codec

import (
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
