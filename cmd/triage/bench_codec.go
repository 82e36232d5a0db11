package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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
	res.WriteTable(stdout, *input, *level, stats)
	if *asJSON {
		return printJSONLine(stdout, res)
	}
	return nil
}
