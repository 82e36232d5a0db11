package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	benchcodec "github.com/triage-agent/triage/internal/bench/codec"
)

const codecSample = "../../testdata/codec/procfs-1s.frames"

// `triage bench codec --json` prints the table, then the result as the
// last line (internal/bench/codec tests the figures themselves).
func TestBenchCodecCommand(t *testing.T) {
	var out bytes.Buffer
	if err := benchCodecCommand(&out, []string{"--input", codecSample, "--json", "--passes", "1"}); err != nil {
		t.Fatal(err)
	}
	var r benchcodec.Result
	if err := json.Unmarshal([]byte(lastLine(out.String())), &r); err != nil {
		t.Fatalf("last line is not the JSON result: %v\n%s", err, out.String())
	}
	if r.Frames != 100 || r.WireBytes <= 0 || r.WireBytes >= r.ZstdOnlyBytes {
		t.Fatalf("result %+v", r)
	}
	for _, want := range []string{"zstd only", "delta codec", "verified byte for byte"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestBenchCodecCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{
		nil, // no --input
		{"--input", codecSample, "--level", "turbo"},
		{"--input", codecSample, "--passes", "0"},
		{"--record", "/nonexistent-dir/x.frames", "--count", "0"},
	} {
		if err := benchCodecCommand(&bytes.Buffer{}, args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
