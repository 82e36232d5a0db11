package signals

import (
	"strings"
	"testing"

	"github.com/triage-agent/triage/bpf"
)

// More processes asked to be watched than the syscall probe's pid map
// holds: the ones past it are refused, counted in PIDsOverflow (and named
// in the probe's status), and the ones it holds stay watched.
func TestSyscallWatchOverflowIsCounted(t *testing.T) {
	requireRoot(t)
	const extra = 3
	// Ids at the top of the accepted range: processes this node is
	// unlikely to run, so watching them times (almost) nothing.
	pids := make([]int, bpf.MaxSyscallWatchedPIDs+extra)
	for i := range pids {
		pids[i] = 1<<22 - i
	}
	c, err := New(Config{}, WithWatchPIDs(pids...), WithoutProbe(ProbeRunqlat), WithoutProbe(ProbeAccept),
		WithoutProbe(ProbeBlkio), WithoutProbe(ProbeTCPStat))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Sample()
	var s Snapshot
	c.Snapshot(&s)
	sys := s.Syscall
	if sys.PIDsOverflow != extra || sys.Watched != bpf.MaxSyscallWatchedPIDs || sys.CgroupsOverflow != 0 || sys.Source.Kind != SourceEBPF {
		t.Errorf("overflow %d (want %d), watched %d (want %d), cgroup overflow %d, source %q",
			sys.PIDsOverflow, extra, sys.Watched, bpf.MaxSyscallWatchedPIDs, sys.CgroupsOverflow, sys.Source.Kind)
	}
	for _, p := range s.Probes {
		if p.Name == ProbeSyscalls && !strings.Contains(p.Reason, bpf.ErrSyscallWatchFull.Error()) {
			t.Errorf("the syscall probe's status does not say why: %q", p.Reason)
		}
	}
}
