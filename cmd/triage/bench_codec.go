package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/triage-agent/triage/codec"
)

// defaultRecordFiles are the kernel counter files one snapshot concatenates:
// what a node-state push would carry, and what the codec is tuned for.
var defaultRecordFiles = []string{
	"/proc/stat", "/proc/diskstats", "/proc/net/snmp", "/proc/net/netstat",
	"/proc/meminfo", "/proc/vmstat", "/proc/interrupts", "/proc/softirqs",
	"/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory", "/proc/loadavg",
}

func init() { registerBench("codec", runBenchCodec) }

type codecBenchResult struct {
	Frames           int     `json:"frames"`
	RawBytes         int64   `json:"raw_bytes"`
	WireBytes        int64   `json:"wire_bytes"`
	ZstdOnlyBytes    int64   `json:"zstd_only_bytes"`
	EncodeNsPerFrame float64 `json:"encode_ns_per_frame"`
	DecodeNsPerFrame float64 `json:"decode_ns_per_frame"`
}

func runBenchCodec(args []string) error { return benchCodecCommand(os.Stdout, args) }

func benchCodecCommand(stdout io.Writer, args []string) error {
	fs := newFlagSet("bench codec", "encode a frame-stream file with the delta codec, decode it back, compare with zstd alone")
	input := fs.String("input", "", "frame-stream `file` to encode and decode (LEB128 length + payload per record)")
	asJSON := fs.Bool("json", false, "print one JSON object as the last line")
	level := fs.String("level", "fastest", "zstd level: fastest|default|better|best")
	ring := fs.Int("ring", codec.DefaultRing, "payloads each side keeps as bases")
	keyframe := fs.Int("keyframe-interval", codec.DefaultKeyframeInterval, "force a full frame every N frames (0: never)")
	maxSize := fs.Int("max-size", codec.DefaultMaxSize, "largest payload accepted, bytes")
	passes := fs.Int("passes", 3, "timed encode and decode passes; the fastest is reported")
	record := fs.String("record", "", "instead of benchmarking, record procfs snapshots into this frame-stream `file`")
	count := fs.Int("count", 100, "with --record: snapshots to take")
	interval := fs.Duration("interval", time.Second, "with --record: time between snapshots")
	files := fs.String("files", strings.Join(defaultRecordFiles, ","), "with --record: comma-separated files one snapshot concatenates")
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	if *record != "" {
		return recordSnapshots(stdout, *record, strings.Split(*files, ","), *count, *interval, *maxSize)
	}
	if *input == "" {
		return errors.New("--input FILE is required (or --record FILE to make one)")
	}
	lvl, ok := parseZstdLevel(*level)
	if !ok {
		return fmt.Errorf("unknown --level %q (fastest|default|better|best)", *level)
	}
	if *passes < 1 || *passes > 100 {
		return fmt.Errorf("--passes %d not in 1..100", *passes)
	}
	f, err := os.Open(*input)
	if err != nil {
		return fmt.Errorf("opening input: %w", err)
	}
	payloads, err := codec.ReadRecords(f, *maxSize)
	f.Close()
	if err != nil {
		return fmt.Errorf("reading %s: %w", *input, err)
	}
	if len(payloads) == 0 {
		return fmt.Errorf("reading %s: no records", *input)
	}
	opts := []codec.Option{codec.WithLevel(lvl), codec.WithRing(*ring), codec.WithKeyframeInterval(*keyframe), codec.WithMaxSize(*maxSize)}
	res, stats, err := benchCodec(payloads, opts, lvl, *passes)
	if err != nil {
		return err
	}
	printCodecTable(stdout, *input, *level, res, stats)
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("encoding result: %w", err)
		}
		fmt.Fprintln(stdout, string(b))
	}
	return nil
}

func parseZstdLevel(s string) (zstd.EncoderLevel, bool) {
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

// benchCodec encodes the stream in stream mode, decodes it back, checks every
// payload byte for byte, and times both sides over several fresh passes.
func benchCodec(payloads [][]byte, opts []codec.Option, lvl zstd.EncoderLevel, passes int) (codecBenchResult, codec.EncoderStats, error) {
	res := codecBenchResult{Frames: len(payloads)}
	var frames [][]byte
	var stats codec.EncoderStats
	bestEnc, bestDec := time.Duration(1<<62), time.Duration(1<<62)
	for pass := 0; pass < passes; pass++ {
		enc, err := codec.NewEncoder(opts...)
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
			h, err := codec.ParseHeader(rest)
			if err != nil {
				return res, stats, fmt.Errorf("splitting frame %d: %w", len(frames), err)
			}
			frames = append(frames, rest[:h.FrameLen()])
			rest = rest[h.FrameLen():]
		}
		if len(frames) != len(payloads) {
			return res, stats, fmt.Errorf("encoded %d frames for %d payloads", len(frames), len(payloads))
		}
		dec, err := codec.NewDecoder(opts...)
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
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(lvl), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
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

func printCodecTable(w io.Writer, input, level string, r codecBenchResult, s codec.EncoderStats) {
	saved := func(n int64) string {
		return fmt.Sprintf("%.2f%%", 100*(1-float64(n)/float64(max(r.RawBytes, 1))))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "input\t%s (%d frames, zstd level %s)\n", input, r.Frames, level)
	fmt.Fprintf(tw, "frames\t%d full, %d delta\n", s.Full, s.Delta)
	fmt.Fprintln(tw, "\tbytes\tbytes/frame\tfewer than raw")
	fmt.Fprintf(tw, "raw\t%d\t%.0f\t-\n", r.RawBytes, float64(r.RawBytes)/float64(r.Frames))
	fmt.Fprintf(tw, "zstd only\t%d\t%.0f\t%s\n", r.ZstdOnlyBytes, float64(r.ZstdOnlyBytes)/float64(r.Frames), saved(r.ZstdOnlyBytes))
	fmt.Fprintf(tw, "delta codec\t%d\t%.0f\t%s\n", r.WireBytes, float64(r.WireBytes)/float64(r.Frames), saved(r.WireBytes))
	fmt.Fprintf(tw, "encode\t%.0f ns/frame\n", r.EncodeNsPerFrame)
	fmt.Fprintf(tw, "decode\t%.0f ns/frame (verified byte for byte)\n", r.DecodeNsPerFrame)
	tw.Flush()
}

// recordSnapshots writes count snapshots of the given files, interval apart,
// as a frame-stream file: the realistic input of `triage bench codec`.
// Files that this kernel lacks are skipped (noted once), so the recorder
// runs anywhere.
func recordSnapshots(stdout io.Writer, path string, files []string, count int, interval time.Duration, maxSize int) error {
	if count < 1 || count > 1_000_000 {
		return fmt.Errorf("--count %d not in 1..1000000", count)
	}
	var present []string
	for _, f := range files {
		if _, err := os.ReadFile(f); err != nil {
			fmt.Fprintf(os.Stderr, "skipping %s: %v\n", f, err)
			continue
		}
		present = append(present, f)
	}
	if len(present) == 0 {
		return fmt.Errorf("none of the %d files is readable", len(files))
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	var snap, rec []byte
	var total int64
	next := time.Now()
	for i := 0; i < count; i++ {
		if i > 0 {
			next = next.Add(interval)
			time.Sleep(time.Until(next))
		}
		snap = snap[:0]
		for _, f := range present {
			b, err := os.ReadFile(f)
			if err != nil {
				out.Close()
				return fmt.Errorf("snapshot %d: %w", i, err)
			}
			snap = fmt.Appendf(snap, "==> %s <==\n", f)
			snap = append(snap, b...)
		}
		if len(snap) > maxSize {
			out.Close()
			return fmt.Errorf("snapshot %d is %d bytes, over --max-size %d", i, len(snap), maxSize)
		}
		rec = codec.AppendRecord(rec[:0], snap)
		if _, err := out.Write(rec); err != nil {
			out.Close()
			return fmt.Errorf("writing %s: %w", path, err)
		}
		total += int64(len(rec))
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "recorded %d snapshots of %d files, %d bytes, into %s\n", count, len(present), total, path)
	return nil
}
