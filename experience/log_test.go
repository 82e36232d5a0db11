package experience

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testchild"
	"github.com/triage-agent/triage/policy"
)

func sampleRecord(i int) Record {
	r := Record{
		UnixNano:  int64(1_700_000_000_000_000_000 + i),
		TaskID:    fmt.Sprintf("task-%06d", i), // fixed width: every frame the same size
		Class:     []string{"realtime-check", "scoring", "batch-infer"}[i%3],
		Action:    uint8(i % policy.NumActions),
		Reward:    float32(i%7) / 7,
		Phase:     "steady",
		LatencyMs: float32(i) * 0.5,
		SLAMet:    i%2 == 0,
		TimedOut:  i%11 == 0,
		Model:     "m-1",
	}
	for k := range r.State {
		r.State[k] = float32((i+k)%10) / 10
		r.Next[k] = float32((i+2*k)%10) / 10
	}
	for k := range r.Q {
		r.Q[k] = float32(i*k) / 100
	}
	return r
}

func readAll(t *testing.T, dir string) []Record {
	t.Helper()
	var got []Record
	if err := ReadDir(dir, func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	return got
}

func writeN(t *testing.T, dir string, opts Options, from, n int) {
	t.Helper()
	w, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := from; i < from+n; i++ {
		r := sampleRecord(i)
		if err := w.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	return segs[len(segs)-1].path
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, Options{}, 0, 500)
	got := readAll(t, dir)
	if len(got) != 500 {
		t.Fatalf("read %d records, want 500", len(got))
	}
	for i, r := range got {
		if want := sampleRecord(i); r != want {
			t.Fatalf("record %d = %+v, want %+v", i, r, want)
		}
	}
}

func TestReopenAppends(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, Options{}, 0, 10)
	writeN(t, dir, Options{}, 10, 10)
	got := readAll(t, dir)
	if len(got) != 20 || got[19].TaskID != "task-000019" {
		t.Fatalf("got %d records", len(got))
	}
}

// A process killed mid-write leaves a prefix of one frame at the end. Every
// prefix length must read as "all complete records, then a torn tail", and
// reopening must truncate it so later appends read back.
func TestTornTailEveryPrefix(t *testing.T) {
	r := sampleRecord(99)
	frame := appendFrame(nil, &r)
	for cut := 1; cut < len(frame); cut += 7 {
		dir := t.TempDir()
		writeN(t, dir, Options{}, 0, 5)
		f, err := os.OpenFile(lastSegment(t, dir), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(frame[:cut]); err != nil {
			t.Fatal(err)
		}
		f.Close()

		st, err := ReadDirWith(dir, ReadOptions{}, nil)
		if err != nil || st.Records != 5 || !st.TornTail {
			t.Fatalf("cut %d: stats %+v err %v, want 5 records and a torn tail", cut, st, err)
		}
		w, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := w.Stats().TruncatedBytes; got != int64(cut) {
			t.Fatalf("cut %d: truncated %d bytes", cut, got)
		}
		more := sampleRecord(5)
		if err := w.Append(&more); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if got := readAll(t, dir); len(got) != 6 || got[5].TaskID != "task-000005" {
			t.Fatalf("cut %d: after reopen read %d records", cut, len(got))
		}
	}
}

func TestZeroTailIsTorn(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, Options{}, 0, 3)
	f, _ := os.OpenFile(lastSegment(t, dir), os.O_APPEND|os.O_WRONLY, 0)
	f.Write(make([]byte, 4096))
	f.Close()
	st, err := ReadDirWith(dir, ReadOptions{}, nil)
	if err != nil || st.Records != 3 || !st.TornTail {
		t.Fatalf("stats %+v err %v", st, err)
	}
}

func TestCorruptMiddleRecord(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, Options{}, 0, 10)
	path := lastSegment(t, dir)
	data, _ := os.ReadFile(path)
	start := 0
	for i := 0; i < 4; i++ {
		r := sampleRecord(i)
		start += len(appendFrame(nil, &r))
	}
	r4 := sampleRecord(4)
	frameLen := len(appendFrame(nil, &r4))
	data[start+frameHeaderSize+3] ^= 0xff // inside record 4's body
	os.WriteFile(path, data, 0o640)

	err := ReadDir(dir, func(Record) error { return nil })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", start)) {
		t.Fatalf("strict read: %v, want ErrCorrupt at offset %d", err, start)
	}
	var ids []string
	st, err := ReadDirWith(dir, ReadOptions{SkipCorrupt: true}, func(r Record) error { ids = append(ids, r.TaskID); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 9 || st.Corrupt != 1 || st.SkippedBytes != int64(frameLen) {
		t.Fatalf("skip read: %+v, want 9 records, 1 corrupt region of %d bytes", st, frameLen)
	}
	for _, id := range ids {
		if id == "task-000004" {
			t.Fatal("corrupted record was delivered")
		}
	}
	// The writer must not truncate good records after the damage: it starts
	// a new segment instead.
	writeN(t, dir, Options{}, 10, 1)
	st, _ = ReadDirWith(dir, ReadOptions{SkipCorrupt: true}, nil)
	if st.Records != 10 || st.Segments != 2 {
		t.Fatalf("after reopen: %+v", st)
	}
}

func TestRotationAndCap(t *testing.T) {
	dir := t.TempDir()
	r := sampleRecord(0)
	frameLen := int64(len(appendFrame(nil, &r)))
	opts := Options{SegmentBytes: 10 * frameLen, MaxTotalBytes: 35 * frameLen}
	writeN(t, dir, opts, 0, 100)
	segs, _ := listSegments(dir)
	var total int64
	for _, s := range segs {
		total += s.size
		if s.size > opts.SegmentBytes {
			t.Fatalf("segment %s is %d bytes, over %d", s.path, s.size, opts.SegmentBytes)
		}
	}
	if total > opts.MaxTotalBytes {
		t.Fatalf("directory holds %d bytes, over the cap %d", total, opts.MaxTotalBytes)
	}
	got := readAll(t, dir)
	// 100 records in segments of 10; the cap keeps 3 full ones and the current.
	if len(got) != 30 || got[0].TaskID != "task-000070" || got[29].TaskID != "task-000099" {
		t.Fatalf("kept %d records from %s to %s", len(got), got[0].TaskID, got[len(got)-1].TaskID)
	}
}

func TestInvalidRecord(t *testing.T) {
	w, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	bad := sampleRecord(1)
	bad.Action = 9
	if err := w.Append(&bad); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("action 9: %v", err)
	}
	bad = sampleRecord(1)
	bad.TaskID = strings.Repeat("x", MaxStringBytes+1)
	if err := w.Append(&bad); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("long id: %v", err)
	}
	w.Close()
	ok := sampleRecord(1)
	if err := w.Append(&ok); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestPeriodicSync(t *testing.T) {
	w, err := Open(t.TempDir(), Options{SyncInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := sampleRecord(1)
	w.Append(&r)
	deadline := time.Now().Add(5 * time.Second)
	for w.Stats().Syncs == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no periodic fsync within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// childEnv makes the test binary act as a writer that appends until killed.
const childEnv = "TRIAGE_EXPERIENCE_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		runChildWriter(dir)
		return
	}
	os.Exit(m.Run())
}

// runChildWriter appends records as fast as it can and prints the index of
// each one after Append returns, so the parent knows what was acknowledged.
func runChildWriter(dir string) {
	w, err := Open(dir, Options{SegmentBytes: 64 << 10})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		r := sampleRecord(i)
		if err := w.Append(&r); err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(out, i)
		if i%50 == 0 {
			out.Flush()
		}
	}
}

// A real process appending in a loop is killed with SIGKILL; every record it
// acknowledged must read back, in order, with nothing corrupted.
func TestSIGKILLMidStream(t *testing.T) {
	dir := t.TempDir()
	cmd := testchild.Command(childEnv + "=" + dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	testchild.Start(t, cmd)
	sc := bufio.NewScanner(stdout)
	acked := -1
	for sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("child said %q", sc.Text())
		}
		acked = n
		if acked >= 3000 {
			break
		}
	}
	testchild.Kill(t, cmd)

	var got []Record
	st, err := ReadDirWith(dir, ReadOptions{}, func(r Record) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatalf("reading after SIGKILL: %v", err)
	}
	if len(got) <= acked {
		t.Fatalf("read %d records, child acknowledged %d", len(got), acked+1)
	}
	for i, r := range got {
		if r != sampleRecord(i) {
			t.Fatalf("record %d differs after SIGKILL", i)
		}
	}
	if st.Segments < 2 {
		t.Fatalf("want the run to have rotated, got %d segments", st.Segments)
	}
	// A writer reopened after the kill continues the log.
	writeN(t, dir, Options{SegmentBytes: 64 << 10}, len(got), 1)
	if again := readAll(t, dir); len(again) != len(got)+1 {
		t.Fatalf("after reopen: %d records, want %d", len(again), len(got)+1)
	}
}

// Arbitrary bytes in a segment never panic, never loop, and never deliver a
// record that is not a valid one.
func FuzzReadSegment(f *testing.F) {
	r := sampleRecord(3)
	good := appendFrame(nil, &r)
	f.Add(good)
	f.Add(append(append([]byte{}, good...), good[:20]...))
	f.Add([]byte{0x54, 0x52, 0x45, 0x31, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, segmentName(1)), data, 0o640); err != nil {
			t.Fatal(err)
		}
		_, _ = ReadDirWith(dir, ReadOptions{SkipCorrupt: true}, func(r Record) error {
			if int(r.Action) >= policy.NumActions {
				t.Fatalf("delivered an invalid record %+v", r)
			}
			return nil
		})
		_ = ReadDir(dir, func(Record) error { return nil })
	})
}

// Skipping a large damaged region stays linear: a megabyte of garbage
// between good records is skipped and counted, and the records after it read.
func TestSkipLargeCorruptRegion(t *testing.T) {
	dir := t.TempDir()
	writeN(t, dir, Options{}, 0, 3)
	f, _ := os.OpenFile(lastSegment(t, dir), os.O_APPEND|os.O_WRONLY, 0)
	junk := make([]byte, 1<<20)
	for i := range junk {
		junk[i] = byte(i*7 + 1)
	}
	f.Write(junk)
	for i := 3; i < 6; i++ {
		r := sampleRecord(i)
		f.Write(appendFrame(nil, &r))
	}
	f.Close()
	st, err := ReadDirWith(dir, ReadOptions{SkipCorrupt: true}, nil)
	if err != nil || st.Records != 6 || st.Corrupt != 1 || st.SkippedBytes != 1<<20 {
		t.Fatalf("stats %+v, err %v", st, err)
	}
}

func TestLoweredCapAppliesOnOpen(t *testing.T) {
	dir := t.TempDir()
	r := sampleRecord(0)
	frameLen := int64(len(appendFrame(nil, &r)))
	writeN(t, dir, Options{SegmentBytes: 10 * frameLen}, 0, 100) // 10 segments, no cap reached
	w, err := Open(dir, Options{SegmentBytes: 10 * frameLen, MaxTotalBytes: 30 * frameLen})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, _ := ReadDirWith(dir, ReadOptions{}, nil)
	if st.Records > 30 || w.Stats().SegmentsRemoved == 0 {
		t.Fatalf("after reopening with a lower cap: %+v, removed %d", st, w.Stats().SegmentsRemoved)
	}
}
