package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/triage-agent/triage/codec"
	benchcodec "github.com/triage-agent/triage/internal/bench/codec"
)

func init() { registerBench("codec", runBenchCodec) }

func runBenchCodec(args []string) error { return benchCodecCommand(os.Stdout, args) }

// benchCodecCommand is `triage bench codec` (internal/bench/codec) writing
// to stdout.
func benchCodecCommand(stdout io.Writer, args []string) error {
	fs, asJSON := newBenchFlagSet("codec", "encode a frame-stream file with the delta codec, decode it back, compare with zstd alone")
	input := fs.String("input", "", "frame-stream `file` to encode and decode (LEB128 length + payload per record)")
	level := fs.String("level", "fastest", "zstd level: fastest|default|better|best")
	ring := fs.Int("ring", codec.DefaultRing, "payloads each side keeps as bases")
	keyframe := fs.Int("keyframe-interval", codec.DefaultKeyframeInterval, "force a full frame every N frames (0: never)")
	maxSize := fs.Int("max-size", codec.DefaultMaxSize, "largest payload accepted, bytes")
	passes := fs.Int("passes", 3, "timed encode and decode passes; the fastest is reported")
	record := fs.String("record", "", "instead of benchmarking, record procfs snapshots into this frame-stream `file`")
	count := fs.Int("count", 100, "with --record: snapshots to take")
	interval := fs.Duration("interval", time.Second, "with --record: time between snapshots")
	files := fs.String("files", strings.Join(benchcodec.DefaultRecordFiles, ","), "with --record: comma-separated files one snapshot concatenates")
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	if *record != "" {
		rec, err := benchcodec.Record(*record, strings.Split(*files, ","), *count, *interval, *maxSize, func(f string, err error) {
			fmt.Fprintf(os.Stderr, "skipping %s: %v\n", f, err)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "recorded %d snapshots of %d files, %d bytes, into %s\n", rec.Snapshots, rec.Files, rec.Bytes, *record)
		return nil
	}
	if *input == "" {
		return errors.New("--input FILE is required (or --record FILE to make one)")
	}
	lvl, ok := benchcodec.ParseLevel(*level)
	if !ok {
		return fmt.Errorf("unknown --level %q (fastest|default|better|best)", *level)
	}
	payloads, err := benchcodec.ReadFrameStream(*input, *maxSize)
	if err != nil {
		return err
	}
	res, stats, err := benchcodec.Run(payloads, benchcodec.Options{Level: lvl, Ring: *ring, KeyframeInterval: *keyframe, MaxSize: *maxSize, Passes: *passes})
	if err != nil {
		return err
	}
	printCodecTable(stdout, *input, *level, res, stats)
	if *asJSON {
		return printJSONLine(stdout, res)
	}
	return nil
}

func printCodecTable(w io.Writer, input, level string, r benchcodec.Result, s codec.EncoderStats) {
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
