package profiler

import (
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testenv"
)

// One short frequency, in this process, in each unwind mode: the profiler
// samples the busy CPUs, writes windows to the store, and the bench reports
// its cost.
func TestRunOneFrequency(t *testing.T) {
	testenv.RequireBPF(t, "the profiler needs root (CAP_BPF + CAP_PERFMON)")
	for _, mode := range []string{"fp", "dwarf"} {
		// 2.4 s of 600 ms windows: the first window also reads the
		// binaries' tables (libc's debug file, a few hundred ms on a busy
		// machine), and still two or more windows fit.
		res, err := Run(Options{Hz: []int{99}, Unwind: []string{mode}, Duration: 2400 * time.Millisecond, Window: 600 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bench != "profiler" || res.CPUs < 1 || res.Machine == "" || len(res.Results) != 1 {
			t.Fatalf("result %+v", res)
		}
		r := res.Results[0]
		t.Logf("%+v", r)
		if r.Hz != 99 || r.Unwind != mode || r.Samples == 0 || r.Windows < 2 || r.StoreBytes == 0 || r.Seconds < 2.4 {
			t.Errorf("row %+v: want 99 Hz, unwind %s, samples, 2 or more windows in the store, 2.4 s", r, mode)
		}
		if r.BaseRSSMiB <= 0 || r.RSSMiB <= 0 || r.PeakRSSMiB < r.RSSMiB || r.AgentCPUPct <= 0 || r.BPFCPUPct <= 0 || r.BPFNsPerSample <= 0 {
			t.Errorf("row %+v: want positive RSS, CPU, BPF time and BPF time per sample", r)
		}
		if mode == "dwarf" && r.SymbolCacheMiB <= 0 {
			t.Errorf("row %+v: dwarf mode read no unwind tables", r)
		}
	}
}

func TestRunBounded(t *testing.T) {
	for _, o := range []Options{
		{Hz: []int{19}, Duration: 0, Window: time.Second},
		{Hz: []int{19}, Duration: 11 * time.Minute, Window: time.Second},
		{Hz: []int{19}, Duration: time.Second},
		{Hz: []int{0}, Duration: time.Second, Window: time.Second},
		{Hz: []int{19}, Unwind: []string{"auto"}, Duration: time.Second, Window: time.Second},
		{Hz: []int{19}, Unwind: []string{"frames"}, Duration: time.Second, Window: time.Second},
	} {
		if _, err := Run(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
