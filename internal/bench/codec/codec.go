// Package codec is `triage bench codec`: it encodes a frame-stream file
// with the delta codec, decodes it back byte for byte, compares the bytes
// with zstd alone, and records such files from procfs.
package codec

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"

	deltacodec "github.com/triage-agent/triage/codec"
)

// Result is the JSON of `triage bench codec --json`.
type Result struct {
	Frames           int     `json:"frames"`
	RawBytes         int64   `json:"raw_bytes"`
	WireBytes        int64   `json:"wire_bytes"`
	ZstdOnlyBytes    int64   `json:"zstd_only_bytes"`
	EncodeNsPerFrame float64 `json:"encode_ns_per_frame"`
	DecodeNsPerFrame float64 `json:"decode_ns_per_frame"`
}

// Options are the codec's settings for one bench.
type Options struct {
	Level            zstd.EncoderLevel
	Ring             int // payloads each side keeps as bases
	KeyframeInterval int // a full frame every N frames (0: never)
	MaxSize          int // largest payload accepted, bytes
	Passes           int // timed encode and decode passes; the fastest is reported
}

// ParseLevel reads a zstd level by name: fastest, default (or ""),
// better, best.
func ParseLevel(s string) (zstd.EncoderLevel, bool) {
	switch s {
	case "fastest":
		return zstd.SpeedFastest, true
	case "default", "":
		return zstd.SpeedDefault, true
	case "better":
		return zstd.SpeedBetterCompression, true
	case "best":
		return zstd.SpeedBestCompression, true
	}
	return 0, false
}

// ReadFrameStream reads the payloads of a frame-stream file (DESIGN: an
// unsigned LEB128 length, then that many bytes, per record), each at most
// maxSize bytes; a file with no record is an error.
func ReadFrameStream(path string, maxSize int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening input: %w", err)
	}
	payloads, err := deltacodec.ReadRecords(f, maxSize)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(payloads) == 0 {
		return nil, fmt.Errorf("reading %s: no records", path)
	}
	return payloads, nil
}

// Run encodes the payloads in stream mode, decodes them back, checks every
// payload byte for byte, and times both sides over o.Passes fresh passes.
func Run(payloads [][]byte, o Options) (Result, deltacodec.EncoderStats, error) {
	res := Result{Frames: len(payloads)}
	var stats deltacodec.EncoderStats
	if o.Passes < 1 || o.Passes > 100 {
		return res, stats, fmt.Errorf("--passes %d not in 1..100", o.Passes)
	}
	opts := []deltacodec.Option{deltacodec.WithLevel(o.Level), deltacodec.WithRing(o.Ring), deltacodec.WithKeyframeInterval(o.KeyframeInterval), deltacodec.WithMaxSize(o.MaxSize)}
	var frames [][]byte
	bestEnc, bestDec := time.Duration(1<<62), time.Duration(1<<62)
	for pass := 0; pass < o.Passes; pass++ {
		enc, err := deltacodec.NewEncoder(opts...)
		if err != nil {
			return res, stats, err
		}
		frames = frames[:0]
		var buf []byte
		start := time.Now()
		for i, p := range payloads {
			buf, err = enc.EncodeAll(p, buf)
			if err != nil {
				return res, stats, fmt.Errorf("encoding frame %d: %w", i, err)
			}
		}
		bestEnc = min(bestEnc, time.Since(start))
		stats = enc.Stats()
		// Split the concatenated frames back apart: the headers say how long each is.
		for rest := buf; len(rest) > 0; {
			h, err := deltacodec.ParseHeader(rest)
			if err != nil {
				return res, stats, fmt.Errorf("splitting frame %d: %w", len(frames), err)
			}
			frames = append(frames, rest[:h.FrameLen()])
			rest = rest[h.FrameLen():]
		}
		if len(frames) != len(payloads) {
			return res, stats, fmt.Errorf("encoded %d frames for %d payloads", len(frames), len(payloads))
		}
		dec, err := deltacodec.NewDecoder(opts...)
		if err != nil {
			return res, stats, err
		}
		var out []byte
		start = time.Now()
		for i, fr := range frames {
			out, err = dec.DecodeAll(fr, out[:0])
			if err != nil {
				return res, stats, fmt.Errorf("decoding frame %d: %w", i, err)
			}
			// The compare is part of the timed loop on purpose: it is tiny
			// next to decoding and keeps every pass verified.
			if !bytes.Equal(out, payloads[i]) {
				return res, stats, fmt.Errorf("frame %d decodes to different bytes", i)
			}
		}
		bestDec = min(bestDec, time.Since(start))
	}
	for _, fr := range frames {
		res.WireBytes += int64(len(fr))
	}
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(o.Level), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
	if err != nil {
		return res, stats, fmt.Errorf("creating zstd encoder: %w", err)
	}
	var zbuf []byte
	for _, p := range payloads {
		res.RawBytes += int64(len(p))
		zbuf = zenc.EncodeAll(p, zbuf[:0])
		res.ZstdOnlyBytes += int64(len(zbuf))
	}
	res.EncodeNsPerFrame = float64(bestEnc.Nanoseconds()) / float64(len(payloads))
	res.DecodeNsPerFrame = float64(bestDec.Nanoseconds()) / float64(len(payloads))
	return res, stats, nil
}
