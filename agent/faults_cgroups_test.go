package agent

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/internal/faulttest"
	"github.com/triage-agent/triage/internal/testenv"
)

// Fault: the agent is asked to watch more cgroups (real ones, on the
// cgroup v2 hierarchy: the unified mount, or the v2 hierarchy beside v1)
// than the per-cgroup run-queue map holds, with spinning processes in the
// first cgroup (watched) and in the last (refused). Kept: the overflow is
// counted (the snapshot and triage_runq_cgroups_overflow), the watched
// cgroups have their histograms, and the node-wide run-queue signal the
// agent serves agrees with a reference probe that watches no cgroup at all
// (p50 and p99 within one log2 bucket, sample counts within 30%). Lost:
// the refused cgroups' own histograms. The syscall probe, given the same
// cgroups, counts its own overflow the same way (its cgroup map holds
// bpf.MaxSyscallWatchedCgroups: Syscall.CgroupsOverflow and
// triage_syscall_cgroups_overflow) and watches the ones it holds.
func TestFaultMoreCgroupsThanTheMapHolds(t *testing.T) {
	testenv.RequireBPF(t, "the run-queue probe and cgroups need root")
	const extra = 44
	root := faulttest.Cgroup2Root(t)
	dirs := faulttest.Cgroups(t, root, bpf.MaxWatchedCgroups+extra)
	first, last := dirs[0], dirs[len(dirs)-1]
	for _, dir := range []string{first, last} {
		load, err := proc.StartLoad(proc.LoadConfig{Spinners: float64(runtime.NumCPU()), Name: "fault-cgroups"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { load.Close() })
		for _, pid := range load.PIDs() {
			faulttest.MoveToCgroup(t, dir, pid)
		}
	}

	const window, interval = 2 * time.Second, 250 * time.Millisecond
	ref, err := bpf.OpenRunqlat(bpf.RunqlatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if ref.Tier() == bpf.TierTracepoint {
		t.Skip("no per-cgroup map on the tracepoint tier (this kernel loaded neither tp_btf nor raw_tp)")
	}
	col, err := signals.New(signals.Config{WatchCgroups: dirs, Window: window, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	ta := startAgent(t, Config{Signals: col})

	// The reference window, sampled on the collector's period.
	refWin := signals.NewWindow(window, interval)
	var cum bpf.Hist
	deadline := time.Now().Add(2*window + time.Second)
	for time.Now().Before(deadline) {
		if err := ref.Read(&cum); err != nil {
			t.Fatal(err)
		}
		refWin.Push(time.Now(), &cum)
		time.Sleep(interval)
	}
	var snap signals.Snapshot
	col.Snapshot(&snap)
	want := refWin.Latency()
	rq := snap.RunQueue

	if rq.CgroupsOverflow != extra {
		t.Errorf("overflow counted %d, want %d (%d cgroups asked, the map holds %d)", rq.CgroupsOverflow, extra, len(dirs), bpf.MaxWatchedCgroups)
	}
	if got := ta.metric(t, "triage_runq_cgroups_overflow"); got != extra {
		t.Errorf("triage_runq_cgroups_overflow %v, want %d", got, extra)
	}
	sys, sysExtra := snap.Syscall, len(dirs)-bpf.MaxSyscallWatchedCgroups
	if sys.CgroupsOverflow != sysExtra || sys.Watched != bpf.MaxSyscallWatchedCgroups || sys.Source.Kind != signals.SourceEBPF {
		t.Errorf("syscall probe: overflow counted %d, want %d; %d cgroups watched, want %d; source %q",
			sys.CgroupsOverflow, sysExtra, sys.Watched, bpf.MaxSyscallWatchedCgroups, sys.Source.Kind)
	}
	if got := ta.metric(t, "triage_syscall_cgroups_overflow"); got != float64(sysExtra) {
		t.Errorf("triage_syscall_cgroups_overflow %v, want %d", got, sysExtra)
	}
	if got := ta.metric(t, "triage_syscall_untimed_total"); got < 0 {
		t.Error("triage_syscall_untimed_total is not on /metrics")
	}
	if len(rq.Cgroups) != bpf.MaxWatchedCgroups {
		t.Errorf("%d cgroups with a histogram, want %d", len(rq.Cgroups), bpf.MaxWatchedCgroups)
	}
	var firstCount uint64
	for _, c := range rq.Cgroups {
		if c.Path == last {
			t.Errorf("the refused cgroup %s has a histogram", last)
		}
		if c.Path == first {
			firstCount = c.Latency.Count
		}
	}
	if firstCount == 0 {
		t.Errorf("the watched cgroup with spinners recorded nothing")
	}
	got := rq.Latency
	t.Logf("node-wide run-queue latency: agent p50 %.0f p99 %.0f µs over %d samples; reference p50 %.0f p99 %.0f µs over %d; watched cgroup %d samples",
		got.P50Us, got.P99Us, got.Count, want.P50Us, want.P99Us, want.Count, firstCount)
	if rq.Source.Kind != signals.SourceEBPF {
		t.Fatalf("node-wide run-queue source %q, want ebpf", rq.Source.Kind)
	}
	if want.Count < 1000 || want.P99Us < 1000 {
		t.Fatalf("the reference saw %d samples, p99 %.0f µs: the spinners did not contend", want.Count, want.P99Us)
	}
	for _, q := range []struct {
		name      string
		got, want signals.Num
	}{{"p50", got.P50Us, want.P50Us}, {"p99", got.P99Us, want.P99Us}} {
		// Written so that NaN (no samples) fails too.
		if d := math.Abs(math.Log2(float64(q.got)) - math.Log2(float64(q.want))); !(d <= 1) {
			t.Errorf("node-wide %s %.0f µs, the reference says %.0f µs: more than one log2 bucket apart", q.name, q.got, q.want)
		}
	}
	if r := float64(got.Count) / float64(want.Count); r < 0.7 || r > 1.3 {
		t.Errorf("node-wide samples %d, the reference %d (ratio %.2f, want within 30%%)", got.Count, want.Count, r)
	}
	// The agent serves the same node-wide figure.
	if st := ta.State(); !(math.Abs(math.Log2(float64(st.GetRunqP99Us()))-math.Log2(float64(got.P99Us))) <= 1) {
		t.Errorf("the agent's node state says p99 %.0f µs, its signals %.0f µs", st.GetRunqP99Us(), got.P99Us)
	}
}
