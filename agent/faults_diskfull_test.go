package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/faulttest"
)

// Fault: the experience directory's filesystem fills up (a real 1 MiB
// tmpfs) while a client streams decisions and outcomes. Kept: every
// decision is served while the disk is full, every failed append is
// counted (triage_experience_errors_total), appends resume when space
// returns, and the log reads back strictly. Lost: exactly the outcomes
// whose append failed, no more.
func TestFaultExperienceDiskFull(t *testing.T) {
	mnt := faulttest.Tmpfs(t, 1<<20)
	expDir := filepath.Join(mnt, "experience")
	ta := startAgent(t, Config{NoEBPF: true, ExperienceDir: expDir,
		ExperienceOptions: experience.Options{SegmentBytes: 64 << 10}})
	s := startStreamer(ta.dial(t), 1, 8, time.Millisecond)
	defer s.stop()

	records := func() float64 { return ta.metric(t, "triage_experience_records_total") }
	errs := func() float64 { return ta.metric(t, "triage_experience_errors_total") }
	waitFor(t, 20*time.Second, "records before the disk fills", func() bool { return records() >= 300 })

	filler := faulttest.Fill(t, mnt)
	fullFrom := s.decided.Load()
	failedFrom := s.failed.Load()
	waitFor(t, 20*time.Second, "failed appends to be counted", func() bool { return errs() >= 300 })
	servedWhileFull := s.decided.Load() - fullFrom
	if f := s.failed.Load() - failedFrom; f != 0 || servedWhileFull < 30 {
		_, _, _, last := s.snapshot()
		t.Fatalf("while the disk was full: %d decide calls served, %d failed (last error %v); want every call served", servedWhileFull, f, last)
	}
	// Appends fail now: the counter of records stands still.
	stuck := records()
	time.Sleep(200 * time.Millisecond)
	if now := records(); now != stuck {
		t.Fatalf("records went from %v to %v on a full disk", stuck, now)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "appends to resume once space returned", func() bool { return records() >= stuck+300 })
	s.finish()
	appended, failedAppends := records(), errs()
	ta.stop()

	acked, _, _, _ := s.snapshot()
	var logged int
	st, err := experience.ReadDirWith(expDir, experience.ReadOptions{}, func(experience.Record) error { logged++; return nil })
	if err != nil {
		t.Fatalf("strict read of the log after the disk filled and emptied: %v", err)
	}
	if float64(logged) != appended {
		t.Fatalf("the log holds %d records, the agent appended %v", logged, appended)
	}
	// Every acknowledged outcome was either appended or counted as failed.
	if got := appended + failedAppends; got != float64(len(acked)) {
		t.Fatalf("%v appended + %v failed = %v, but %d outcomes were acknowledged", appended, failedAppends, got, len(acked))
	}
	if st.TornTail {
		t.Fatalf("a torn tail after a clean stop: %+v", st)
	}
	t.Logf("acked %d outcomes: %v logged in %d segments, %v failed on the full disk; %d decide calls served while full",
		len(acked), appended, st.Segments, failedAppends, servedWhileFull)
}
