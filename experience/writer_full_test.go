package experience

import (
	"errors"
	"os"
	"testing"

	"github.com/triage-agent/triage/internal/faulttest"
	"golang.org/x/sys/unix"
)

// A full disk fails appends with ENOSPC, possibly after part of a frame is
// written. The partial frame must not stay in the log: once space returns,
// appends resume, and a strict read returns exactly the acknowledged
// records, in order. Segments rotate across the full period too.
func TestAppendsResumeAfterDiskFull(t *testing.T) {
	dir := faulttest.Tmpfs(t, 256<<10)
	frame := int64(len(appendFrame(nil, ptr(sampleRecord(0)))))
	w, err := Open(dir, Options{SegmentBytes: 40 * frame})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var acked []int
	appendAt := func(i int) error {
		r := sampleRecord(i)
		err := w.Append(&r)
		if err == nil {
			acked = append(acked, i)
		}
		return err
	}
	i := 0
	for ; i < 100; i++ {
		if err := appendAt(i); err != nil {
			t.Fatalf("append %d before the disk filled: %v", i, err)
		}
	}
	filler := faulttest.Fill(t, dir)
	failed := 0
	for ; i < 400; i++ {
		if err := appendAt(i); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("append %d on a full disk: %v, want ENOSPC", i, err)
			}
			failed++
		}
	}
	if failed < 250 {
		t.Fatalf("%d of 300 appends failed on a full disk, want nearly all", failed)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for ; i < 500; i++ {
		if err := appendAt(i); err != nil {
			t.Fatalf("append %d after space returned: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []Record
	st, err := ReadDirWith(dir, ReadOptions{}, func(r Record) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatalf("strict read after the disk filled and emptied: %v", err)
	}
	if len(got) != len(acked) {
		t.Fatalf("read %d records, %d were acknowledged (%d appends failed)", len(got), len(acked), failed)
	}
	for k, r := range got {
		if r != sampleRecord(acked[k]) {
			t.Fatalf("record %d is not acknowledged record %d", k, acked[k])
		}
	}
	if st.Segments < 3 || st.TornTail {
		t.Fatalf("stats %+v: want several segments (rotation across the full period) and no torn tail", st)
	}
	t.Logf("%d appended, %d failed on the full disk, %d segments", len(acked), failed, st.Segments)
}

func ptr[T any](v T) *T { return &v }
