package signals

import (
	"os"
	"testing"
	"time"
)

// With ProbeCPUStats the kernel accounts the probes' run time: after the
// collector has seen context switches, block I/O and syscalls, the probes
// that ran report CPU time, and it only grows. Without it, nothing is
// reported (and the accounting stays off).
func TestProbeCPUStats(t *testing.T) {
	requireRoot(t)
	c, err := New(Config{ProbeCPUStats: true, SlowInterval: 100 * time.Millisecond}, WithWatchPIDs(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if on, err := c.ProbeCPUStats(); !on {
		t.Fatalf("run-time accounting not on: %v", err)
	}
	exercise(t, c)
	var s Snapshot
	c.Snapshot(&s)
	first := map[string]float64{}
	for _, p := range s.Probes {
		first[p.Name] = p.CPUSeconds
		if p.Attached && p.Name == ProbeRunqlat && !(p.CPUSeconds > 0) {
			t.Errorf("runqlat ran on every context switch but reports %v s", p.CPUSeconds)
		}
		if !p.Attached && p.CPUSeconds != 0 {
			t.Errorf("unattached probe %s reports %v s", p.Name, p.CPUSeconds)
		}
	}
	exercise(t, c)
	c.Snapshot(&s)
	for _, p := range s.Probes {
		if p.CPUSeconds < first[p.Name] {
			t.Errorf("%s CPU time went back from %v to %v", p.Name, first[p.Name], p.CPUSeconds)
		}
	}
	t.Logf("probes: %+v", s.Probes)

	off, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if on, _ := off.ProbeCPUStats(); on {
		t.Error("accounting on without ProbeCPUStats")
	}
}
