package codec

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// sampleStream is the committed procfs snapshot stream (100 snapshots, 1 s
// apart) that the ratio targets are stated for.
var sampleStream = flag.String("sample", "../testdata/codec/procfs-1s.frames", "frame-stream file of realistic payloads")

func loadSample(tb testing.TB) [][]byte {
	tb.Helper()
	f, err := os.Open(*sampleStream)
	if err != nil {
		tb.Fatalf("opening sample stream: %v", err)
	}
	defer f.Close()
	recs, err := ReadRecords(f, DefaultMaxSize)
	if err != nil {
		tb.Fatalf("reading sample stream: %v", err)
	}
	if len(recs) < 10 {
		tb.Fatalf("sample stream has %d records, want at least 10", len(recs))
	}
	return recs
}

func benchLevels() map[string]zstd.EncoderLevel {
	return map[string]zstd.EncoderLevel{"fastest": zstd.SpeedFastest, "default": zstd.SpeedDefault}
}

// BenchmarkEncodeStream encodes the sample stream frame after frame (stream
// mode: every frame is a delta against the previous payload).
func BenchmarkEncodeStream(b *testing.B) {
	recs := loadSample(b)
	for name, lvl := range benchLevels() {
		b.Run(name, func(b *testing.B) {
			enc, err := NewEncoder(WithLevel(lvl))
			if err != nil {
				b.Fatal(err)
			}
			var dst []byte
			var wire, raw int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				p := recs[i%len(recs)]
				dst, err = enc.EncodeAll(p, dst[:0])
				if err != nil {
					b.Fatal(err)
				}
				wire += len(dst)
				raw += len(p)
			}
			b.ReportMetric(float64(wire)/float64(raw), "wire/raw")
		})
	}
}

// BenchmarkDecodeStream decodes the sample stream's frames in order, over
// and over with one decoder: the stream starts with an F frame, so each lap
// needs no base from the one before.
func BenchmarkDecodeStream(b *testing.B) {
	recs := loadSample(b)
	e, err := NewEncoder()
	if err != nil {
		b.Fatal(err)
	}
	var frames [][]byte
	wire, raw := 0, 0
	for _, r := range recs {
		f, err := e.EncodeAll(r, nil)
		if err != nil {
			b.Fatal(err)
		}
		frames = append(frames, f)
		wire += len(f)
		raw += len(r)
	}
	d, err := NewDecoder()
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, 0, DefaultMaxSize)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if out, err = d.DecodeAll(frames[i%len(frames)], out[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100*(1-float64(wire)/float64(raw)), "%saved")
}

// BenchmarkSmallPayloads: decide-sized messages. Full frames need no
// dictionary; deltas against a new base each frame pay zstd's table build,
// a fixed cost that dominates small payloads.
func BenchmarkSmallPayloads(b *testing.B) {
	for _, size := range []int{256, 2048} {
		snaps := counterSnapshots(30, 64, size/20)
		for _, tc := range []struct {
			name string
			opts []Option
		}{{"full", []Option{WithKeyframeInterval(1)}}, {"delta", nil}} {
			b.Run(fmt.Sprintf("%dB/%s", size, tc.name), func(b *testing.B) {
				e, err := NewEncoder(tc.opts...)
				if err != nil {
					b.Fatal(err)
				}
				d, err := NewDecoder()
				if err != nil {
					b.Fatal(err)
				}
				var f, out []byte
				wire, raw := 0, 0
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					p := snaps[i%len(snaps)]
					if f, err = e.EncodeAll(p, f[:0]); err != nil {
						b.Fatal(err)
					}
					if out, err = d.DecodeAll(f, out[:0]); err != nil {
						b.Fatal(err)
					}
					wire += len(f)
					raw += len(p)
				}
				b.ReportMetric(float64(wire)/float64(raw), "wire/raw")
			})
		}
	}
}
