package bpf

import (
	"os"
	"testing"
	"time"
)

func TestProgramStatsArithmetic(t *testing.T) {
	stats := []ProgramStats{
		{Name: "busy", RunCount: 4, Runtime: 400 * time.Nanosecond},
		{Name: "idle"},
		{Name: "other", RunCount: 1, Runtime: 50 * time.Nanosecond},
	}
	if got := stats[0].NsPerRun(); got != 100 {
		t.Errorf("NsPerRun = %v, want 100", got)
	}
	if got := stats[1].NsPerRun(); got != 0 {
		t.Errorf("NsPerRun of a program that never ran = %v, want 0", got)
	}
	if got := TotalRunTime(stats); got != 450*time.Nanosecond {
		t.Errorf("TotalRunTime = %v, want 450ns", got)
	}
}

// TestRunStatsCountProfilerRuns checks that the profiler reports both of
// its attached programs and that the kernel counted their runs.
func TestRunStatsCountProfilerRuns(t *testing.T) {
	requireBPF(t)
	enableRunStats(t)
	p := mustOpen(t, OpenProfiler, ProfilerOptions{FrequencyHz: 499, PID: uint32(os.Getpid()), OffCPU: true})
	spin(100 * time.Millisecond)
	for i := 0; i < 5; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	stats, err := p.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	offProg := map[string]string{"tp_btf": "offcpu_switch_btf", "raw_tp": "offcpu_switch_raw", "tracepoint": "offcpu_switch_tp"}[p.OffCPUHook()]
	want := []string{"profile_sample", offProg}
	if len(stats) != len(want) {
		t.Fatalf("Stats = %+v, want one entry for each of %v", stats, want)
	}
	for i, s := range stats {
		if s.Name != want[i] {
			t.Errorf("stats[%d] is %q, want %q", i, s.Name, want[i])
		}
		if s.RunCount == 0 || s.Runtime <= 0 {
			t.Errorf("%s: %d runs in %v, want both above zero", s.Name, s.RunCount, s.Runtime)
		}
	}
	if total := TotalRunTime(stats); total < stats[0].Runtime || total < stats[1].Runtime {
		t.Errorf("TotalRunTime %v is below a part (%v, %v)", total, stats[0].Runtime, stats[1].Runtime)
	}
}

// TestRunStatsCountProbeRuns checks the same for a signal probe: every
// program of the attached tier is listed, and sched_switch ran.
func TestRunStatsCountProbeRuns(t *testing.T) {
	requireBPF(t)
	enableRunStats(t)
	r := mustOpen(t, OpenRunqlat, RunqlatOptions{})
	for i := 0; i < 5; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	stats, err := r.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if len(stats) != len(runqlatHooks) {
		t.Fatalf("Stats = %+v, want one entry per hook (%d)", stats, len(runqlatHooks))
	}
	for i, s := range stats {
		if want := runqlatHooks[i].prog(r.Tier()); s.Name != want {
			t.Errorf("stats[%d] is %q, want %q", i, s.Name, want)
		}
		if runqlatHooks[i].name == "sched_switch" && s.RunCount == 0 {
			t.Errorf("%s never ran across five sleeps", s.Name)
		}
	}
}

// enableRunStats turns the kernel's counting of BPF run time on until the
// test ends.
func enableRunStats(t *testing.T) {
	t.Helper()
	st, err := EnableRunStats()
	if err != nil {
		t.Fatalf("EnableRunStats: %v", err)
	}
	t.Cleanup(func() { st.Close() })
}
