package codec

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	deltacodec "github.com/triage-agent/triage/codec"
)

const sample = "../../../testdata/codec/procfs-1s.frames"

func defaultOptions() Options {
	return Options{Level: zstd.SpeedFastest, Ring: deltacodec.DefaultRing, KeyframeInterval: deltacodec.DefaultKeyframeInterval, MaxSize: deltacodec.DefaultMaxSize, Passes: 1}
}

// The committed sample (100 one-second procfs snapshots) is what the
// codec's README figure is measured on: the delta codec must save at least
// 97% of the raw bytes, and more than zstd alone.
func TestRunOnSample(t *testing.T) {
	payloads, err := ReadFrameStream(sample, deltacodec.DefaultMaxSize)
	if err != nil {
		t.Fatal(err)
	}
	r, stats, err := Run(payloads, defaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r.Frames != 100 || stats.Full+stats.Delta != 100 || r.RawBytes <= 0 || r.EncodeNsPerFrame <= 0 || r.DecodeNsPerFrame <= 0 {
		t.Fatalf("result %+v, stats %+v", r, stats)
	}
	saved := 1 - float64(r.WireBytes)/float64(r.RawBytes)
	zstdSaved := 1 - float64(r.ZstdOnlyBytes)/float64(r.RawBytes)
	t.Logf("wire %.2f%% fewer than raw, zstd alone %.2f%% fewer; %d full, %d delta", 100*saved, 100*zstdSaved, stats.Full, stats.Delta)
	if saved < 0.97 || saved <= zstdSaved {
		t.Errorf("delta codec saves %.2f%%, zstd alone %.2f%%: want >= 97%% and better than zstd", 100*saved, 100*zstdSaved)
	}
}

func TestRunBounded(t *testing.T) {
	o := defaultOptions()
	for _, passes := range []int{0, 101} {
		o.Passes = passes
		if _, _, err := Run([][]byte{[]byte("x")}, o); err == nil || !strings.Contains(err.Error(), "--passes") {
			t.Errorf("%d passes: %v", passes, err)
		}
	}
}

func TestReadFrameStreamBadInput(t *testing.T) {
	dir := t.TempDir()
	good := deltacodec.AppendRecord(nil, []byte("snapshot"))
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"truncated-varint": {append(bytes.Clone(good), 0x80), "length cut short"},
		"past-eof":         {append(bytes.Clone(good), 10, 'a', 'b'), "2 of 10 bytes"},
		"giant-length":     {binary.AppendUvarint(bytes.Clone(good), 1<<50), "too large"},
		"empty":            {nil, "no records"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFrameStream(path, deltacodec.DefaultMaxSize)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to say %q", name, err, tc.want)
		}
	}
	if _, err := ReadFrameStream(filepath.Join(dir, "no-such-file"), deltacodec.DefaultMaxSize); err == nil {
		t.Error("missing file: no error")
	}
}

func TestRecordsProcfs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.frames")
	var skipped []string
	rec, err := Record(path, []string{"/proc/stat", "/proc/vmstat", "/proc/no-such-file"}, 3, 20e6, deltacodec.DefaultMaxSize, func(f string, err error) {
		skipped = append(skipped, f)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Snapshots != 3 || rec.Files != 2 || len(skipped) != 1 || skipped[0] != "/proc/no-such-file" {
		t.Fatalf("recording %+v, skipped %q", rec, skipped)
	}
	recs, err := ReadFrameStream(path, deltacodec.DefaultMaxSize)
	if err != nil || len(recs) != 3 {
		t.Fatalf("recorded %d records, %v", len(recs), err)
	}
	if !bytes.Contains(recs[0], []byte("==> /proc/vmstat <==\n")) || bytes.Contains(recs[0], []byte("no-such-file")) {
		t.Errorf("snapshot lacks the vmstat section or has the missing file:\n%.200s", recs[0])
	}
	if r, _, err := Run(recs, defaultOptions()); err != nil || r.Frames != 3 || r.WireBytes >= r.RawBytes {
		t.Errorf("bench of the recording: %+v, %v", r, err)
	}
	if _, err := Record(path, []string{"/proc/no-such-file"}, 3, 0, deltacodec.DefaultMaxSize, nil); err == nil {
		t.Error("no readable file: no error")
	}
}
