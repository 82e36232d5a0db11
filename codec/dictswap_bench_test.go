package codec

import (
	"testing"

	"github.com/klauspost/compress/zstd"
)

// BenchmarkDictSwap compares the ways to delta-encode against a base that
// changes every frame (stream mode): a fresh zstd encoder per base; one
// encoder re-armed with ResetWithOptions, then EncodeAll (two table
// builds) or the stream API (one build: what Encoder does); and, for scale,
// an unchanged base and plain zstd without any base.
func BenchmarkDictSwap(b *testing.B) {
	recs := loadSample(b)
	for name, lvl := range benchLevels() {
		opts := []zstd.EOption{zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithWindowSize(zstdWindow(DefaultMaxSize))} // the largest window an Encoder grows to
		// encoder is a zstd encoder with opts and, unless dict is nil, the
		// raw dictionary dict.
		encoder := func(b *testing.B, dict []byte) *zstd.Encoder {
			b.Helper()
			o := opts
			if dict != nil {
				o = append(opts, zstd.WithEncoderDictRaw(0, dict))
			}
			z, err := zstd.NewWriter(nil, o...)
			if err != nil {
				b.Fatal(err)
			}
			return z
		}
		b.Run(name+"/new-encoder-per-base", func(b *testing.B) {
			var dst []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				base, p := recs[i%len(recs)], recs[(i+1)%len(recs)]
				z := encoder(b, base)
				dst = z.EncodeAll(p, dst[:0])
			}
		})
		b.Run(name+"/reset-with-options", func(b *testing.B) {
			z := encoder(b, []byte{})
			var dst []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				base, p := recs[i%len(recs)], recs[(i+1)%len(recs)]
				if err := z.ResetWithOptions(nil, zstd.WithEncoderDictRaw(0, base)); err != nil {
					b.Fatal(err)
				}
				dst = z.EncodeAll(p, dst[:0])
			}
		})
		b.Run(name+"/reset-with-options-stream-api", func(b *testing.B) {
			z := encoder(b, []byte{})
			var sink appendSink
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				base, p := recs[i%len(recs)], recs[(i+1)%len(recs)]
				sink.b = sink.b[:0]
				if err := z.ResetWithOptions(&sink, zstd.WithEncoderDictRaw(0, base)); err != nil {
					b.Fatal(err)
				}
				z.ResetContentSize(&sink, int64(len(p)))
				z.Write(p)
				if err := z.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/same-base", func(b *testing.B) {
			z := encoder(b, recs[0])
			var dst []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				dst = z.EncodeAll(recs[1+i%(len(recs)-1)], dst[:0])
			}
		})
		b.Run(name+"/no-base", func(b *testing.B) {
			z := encoder(b, nil)
			var dst []byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				dst = z.EncodeAll(recs[i%len(recs)], dst[:0])
			}
		})
	}
}
