package experience

import (
	"errors"
	"reflect"
	"testing"
)

// AppendAll writes a batch that reads back as the records appended one by
// one would, rotates like Append, and writes nothing of a batch with an
// invalid record.
func TestAppendAll(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, Options{SegmentBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var want []Record
	for b := 0; b < 20; b++ {
		batch := make([]Record, 1+b%5)
		for i := range batch {
			batch[i] = sampleRecord(len(want) + i)
		}
		if err := w.AppendAll(batch); err != nil {
			t.Fatal(err)
		}
		want = append(want, batch...)
	}
	bad := []Record{sampleRecord(1000), sampleRecord(1001)}
	bad[1].Action = 9 // no such priority
	if err := w.AppendAll(bad); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("a batch with an invalid record: %v", err)
	}
	if err := w.AppendAll(nil); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if st.Appended != uint64(len(want)) || st.Rotations == 0 {
		t.Fatalf("stats %+v for %d records in 4 KiB segments", st, len(want))
	}
	got := readAll(t, dir)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %d records, want %d as appended", len(got), len(want))
	}
}
