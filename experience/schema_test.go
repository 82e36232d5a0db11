package experience

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// v1Frame is a frame of the layout triage.state.v1 agents wrote: record
// version 1, states of 12 floats.
func v1Frame() []byte {
	const v1Features = 12
	b := []byte{1}
	b = binary.LittleEndian.AppendUint64(b, 1_700_000_000_000_000_000)
	b = appendString(b, "task-1")
	b = appendString(b, "scoring")
	b = appendFloats(b, make([]float32, v1Features)) // state
	b = append(b, 2)                                 // action
	b = appendFloats(b, make([]float32, policy.NumActions))
	b = appendFloats(b, []float32{0.5}) // reward
	b = appendString(b, "steady")
	b = appendFloats(b, []float32{12}) // latency
	b = append(b, 1)                   // flags: SLA met
	b = appendString(b, "default-v1")
	b = appendFloats(b, make([]float32, v1Features)) // next state
	frame := binary.LittleEndian.AppendUint32(nil, frameMagic)
	frame = binary.LittleEndian.AppendUint32(frame, uint32(len(b)))
	frame = binary.LittleEndian.AppendUint32(frame, crc32.Checksum(b, castagnoli))
	return append(frame, b...)
}

// A log written before the upgrade to triage.state.v2 holds states of
// another length (TestV1RecordRefusedByName flips a version byte; this is
// the whole v1 layout): its records are refused by version, never read as
// 20-feature states, an agent opening the log appends its v2 records in a
// new segment after the old one, and a reader that skips corrupt records
// reads them.
func TestV1LogAfterTheUpgrade(t *testing.T) {
	frame := v1Frame()
	if _, err := decodeBody(frame[frameHeaderSize:]); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "record version 1 holds triage.state.v1") {
		t.Fatalf("decoding a v1 record: %v, want ErrCorrupt naming v1", err)
	}
	dir := t.TempDir()
	old := filepath.Join(dir, segmentName(1))
	if err := os.WriteFile(old, frame, 0o640); err != nil {
		t.Fatal(err)
	}
	writeN(t, dir, Options{}, 0, 3)
	if b, _ := os.ReadFile(old); string(b) != string(frame) {
		t.Fatalf("the v1 segment was changed: %d bytes, had %d", len(b), len(frame))
	}
	if err := ReadDir(dir, func(Record) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading a log with v1 records: %v, want ErrCorrupt", err)
	}
	var got []Record
	st, err := ReadDirWith(dir, ReadOptions{SkipCorrupt: true}, func(r Record) error { got = append(got, r); return nil })
	if err != nil || st.Corrupt != 1 || len(got) != 3 || got[0].TaskID != sampleRecord(0).TaskID {
		t.Fatalf("skipping the v1 records: %+v, %d records, %v", st, len(got), err)
	}
}
