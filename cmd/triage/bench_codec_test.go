package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-agent/triage/codec"
)

const codecSample = "../../testdata/codec/procfs-1s.frames"

func lastJSON(t *testing.T, out string) codecBenchResult {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var r codecBenchResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("last line is not the JSON result: %v\n%s", err, out)
	}
	return r
}

func TestBenchCodecOnSample(t *testing.T) {
	var out bytes.Buffer
	if err := benchCodecCommand(&out, []string{"--input", codecSample, "--json", "--passes", "1"}); err != nil {
		t.Fatal(err)
	}
	r := lastJSON(t, out.String())
	if r.Frames != 100 || r.RawBytes <= 0 || r.EncodeNsPerFrame <= 0 || r.DecodeNsPerFrame <= 0 {
		t.Fatalf("result %+v", r)
	}
	saved := 1 - float64(r.WireBytes)/float64(r.RawBytes)
	zstdSaved := 1 - float64(r.ZstdOnlyBytes)/float64(r.RawBytes)
	t.Logf("wire %.2f%% fewer than raw, zstd alone %.2f%% fewer", 100*saved, 100*zstdSaved)
	if saved < 0.97 || saved <= zstdSaved {
		t.Errorf("delta codec saves %.2f%%, zstd alone %.2f%%: want >= 97%% and better than zstd", 100*saved, 100*zstdSaved)
	}
	for _, want := range []string{"zstd only", "delta codec", "verified byte for byte"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBenchCodecBadInput(t *testing.T) {
	dir := t.TempDir()
	good := codec.AppendRecord(nil, []byte("snapshot"))
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
		err := benchCodecCommand(&bytes.Buffer{}, []string{"--input", path})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to say %q", name, err, tc.want)
		}
	}
	if err := benchCodecCommand(&bytes.Buffer{}, nil); err == nil {
		t.Error("no --input: no error")
	}
	if err := benchCodecCommand(&bytes.Buffer{}, []string{"--input", codecSample, "--level", "turbo"}); err == nil {
		t.Error("unknown level: no error")
	}
}

func TestBenchCodecRecordsProcfs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.frames")
	var out bytes.Buffer
	err := benchCodecCommand(&out, []string{"--record", path, "--count", "3", "--interval", "20ms", "--files", "/proc/stat,/proc/vmstat,/proc/no-such-file"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := codec.ReadRecords(f, codec.DefaultMaxSize)
	if err != nil || len(recs) != 3 {
		t.Fatalf("recorded %d records, %v", len(recs), err)
	}
	if !bytes.Contains(recs[0], []byte("==> /proc/vmstat <==\n")) || bytes.Contains(recs[0], []byte("no-such-file")) {
		t.Errorf("snapshot lacks the vmstat section or has the missing file:\n%.200s", recs[0])
	}
	out.Reset()
	if err := benchCodecCommand(&out, []string{"--input", path, "--json", "--passes", "1"}); err != nil {
		t.Fatal(err)
	}
	if r := lastJSON(t, out.String()); r.Frames != 3 || r.WireBytes >= r.RawBytes {
		t.Errorf("bench of the recording: %+v", r)
	}
}
