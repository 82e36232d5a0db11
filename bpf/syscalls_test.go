package bpf

import (
	"strconv"
	"testing"
)

// TestSyscallsWatchedPidNanosleep watches a child doing 2 ms nanosleeps:
// its histogram must put them in the 1-4 ms buckets; an unwatched process
// (this test) must not add samples.
func TestSyscallsWatchedPidNanosleep(t *testing.T) {
	requireBPF(t)
	for _, tier := range allTiers {
		t.Run(tier.String(), func(t *testing.T) {
			s := mustOpen(t, OpenSyscalls, SyscallsOptions{Tier: tier})
			var h0 Hist
			if err := s.Read(&h0); err != nil {
				t.Fatal(err)
			}
			if h0.Count() != 0 || s.Attached() {
				t.Fatalf("nothing watched yet: %d samples, attached %v", h0.Count(), s.Attached())
			}
			const sleeps = 100
			child := startLoadChild(t, "sleep:"+strconv.Itoa(sleeps)+":2000")
			if err := s.WatchPID(uint32(child.pid())); err != nil {
				t.Fatal(err)
			}
			if !s.Attached() {
				t.Fatal("watching a pid did not attach the programs")
			}
			child.run(t)
			if err := s.UnwatchPID(uint32(child.pid())); err != nil || s.Attached() {
				t.Fatalf("unwatching the last pid: err %v, still attached %v", err, s.Attached())
			}
			var h Hist
			if err := s.Read(&h); err != nil {
				t.Fatal(err)
			}
			inRange := h.Slots[20] + h.Slots[21] // [1.05 ms, 4.19 ms)
			t.Logf("%d syscalls, %d in 1-4 ms, p50 %.0f µs p99 %.0f µs", h.Count(), inRange, h.Quantile(0.5)/1e3, h.Quantile(0.99)/1e3)
			if inRange < sleeps {
				t.Errorf("%d samples in the 1-4 ms buckets, want >= %d (one per 2 ms nanosleep)", inRange, sleeps)
			}
			if p99 := h.Quantile(0.99); p99 < 1e6 {
				t.Errorf("p99 %.0f µs, want >= 1 ms", p99/1e3)
			}
		})
	}
}
