package codec

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"runtime"
	"testing"
)

func TestRecordsRoundTrip(t *testing.T) {
	payloads := [][]byte{[]byte("one"), {}, bytes.Repeat([]byte("x"), 300)}
	var file []byte
	for _, p := range payloads {
		file = AppendRecord(file, p)
	}
	got, err := ReadRecords(bytes.NewReader(file), 1000)
	if err != nil || len(got) != len(payloads) {
		t.Fatalf("ReadRecords = %d records, %v", len(got), err)
	}
	for i := range got {
		if !bytes.Equal(got[i], payloads[i]) {
			t.Errorf("record %d differs", i)
		}
	}
}

func TestRecordsBadInput(t *testing.T) {
	good := AppendRecord(nil, []byte("fine"))
	tests := []struct {
		name  string
		file  []byte
		want  error
		short bool
	}{
		{"truncated varint", append(bytes.Clone(good), 0x80), ErrMalformed, true},
		{"length past EOF", AppendRecord(bytes.Clone(good), []byte("cut"))[:len(good)+3], ErrMalformed, true},
		{"giant length", binary.AppendUvarint(bytes.Clone(good), 1<<62), ErrTooLarge, false},
		{"varint overflow", append(bytes.Clone(good), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrMalformed, false},
	}
	for _, tt := range tests {
		got, err := ReadRecords(bytes.NewReader(tt.file), 1<<20)
		if !errorsIs(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
		if errorsIs(err, io.ErrUnexpectedEOF) != tt.short {
			t.Errorf("%s: wraps io.ErrUnexpectedEOF = %v, want %v", tt.name, !tt.short, tt.short)
		}
		if len(got) != 1 || string(got[0]) != "fine" {
			t.Errorf("%s: the good record before the damage was lost: %q", tt.name, got)
		}
	}
}

func TestRecordReaderBoundsAllocation(t *testing.T) {
	// A length at the limit with nothing behind it allocates at most the
	// limit, and one past the limit nothing at all.
	const limit = 4 << 10
	rr := NewRecordReader(bytes.NewReader(binary.AppendUvarint(nil, limit+1)), limit)
	if _, err := rr.Next(); !errorsIs(err, ErrTooLarge) {
		t.Fatalf("length past the limit: %v", err)
	}
	// A lying length at the limit: the buffer for it, nothing more.
	// TotalAlloc counts every goroutine's allocations, so a goroutine left
	// over from another test can add to one measurement; the fewest bytes
	// of five tries is this reader's.
	grew := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rr = NewRecordReader(bytes.NewReader(binary.AppendUvarint(nil, limit)), limit)
		if _, err := rr.Next(); !errorsIs(err, io.ErrUnexpectedEOF) {
			t.Fatalf("length past EOF: %v", err)
		}
		runtime.ReadMemStats(&after)
		grew = min(grew, after.TotalAlloc-before.TotalAlloc)
	}
	// bufio's 4 KiB buffer plus the record's: never more than both.
	if grew > 2*limit+4<<10 {
		t.Errorf("a %d-byte record cut short allocated %d bytes", limit, grew)
	}
}
