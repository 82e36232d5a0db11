package signals

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	agentsignals "github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/internal/testenv"
)

// One small alternating run of every measurement but the footprint child
// (which re-executes the triage binary): the probes attach, the kernel
// accounts their runs, and the floor program runs on every switch.
func TestRunSmall(t *testing.T) {
	testenv.RequireBPF(t, "the probes and the kernel's BPF run-time stats need root")
	res, err := Run(Options{Rounds: 2000, Calls: 2000, Reps: 1, Peer: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	t.Logf("%s", b)
	if res.Tier == "" || res.Reps != 1 || !strings.Contains(res.Machine, "CPUs, kernel") {
		t.Errorf("tier %q, reps %d, machine %q", res.Tier, res.Reps, res.Machine)
	}
	if res.SwitchNsBase <= 0 || res.SwitchNsTriage <= 0 || res.SwitchNsSampled4 <= 0 || res.SyscallNsBase <= 0 || res.SyscallNsWatched <= 0 {
		t.Errorf("a side-by-side figure is missing: %s", b)
	}
	if res.FloorNsPerRun <= 0 {
		t.Errorf("the empty tp_btf program never ran: %v ns per run", res.FloorNsPerRun)
	}
	// The run-queue programs run on wakeups and switches, the syscall
	// programs on entries and exits of the watched getppid loop.
	for _, hook := range []string{"_wakeup", "_switch", "_enter", "_exit"} {
		ran := false
		for _, p := range res.Programs {
			ran = ran || (strings.HasSuffix(p.Name, hook) && p.RunCount > 0 && p.NsPerRun > 0)
		}
		if !ran {
			t.Errorf("no program on %s with runs in %+v", hook, res.Programs)
		}
	}
	if len(res.Footprint) != 0 {
		t.Errorf("footprint measured with Footprint 0: %+v", res.Footprint)
	}
}

func TestRunBounded(t *testing.T) {
	for _, o := range []Options{{Rounds: 10, Calls: 2000, Reps: 1}, {Rounds: 2000, Calls: 1e9, Reps: 1}, {Rounds: 2000, Calls: 2000, Reps: 51}} {
		if _, err := Run(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// The child side of the footprint: one snapshot a second, the process's
// own cost as one JSON object (procfs only, so it runs unprivileged too).
func TestMeasureFootprint(t *testing.T) {
	var out bytes.Buffer
	if err := MeasureFootprint(agentsignals.Config{DisableBPF: true}, 1500*time.Millisecond, &out); err != nil {
		t.Fatal(err)
	}
	var fp Footprint
	if err := json.Unmarshal(out.Bytes(), &fp); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	t.Logf("%+v", fp)
	if fp.Samples != 2 || fp.Seconds < 1.5 || fp.RSSMiB <= 0 || fp.PeakRSSMiB < fp.RSSMiB || fp.HeapMiB <= 0 || !strings.Contains(fp.Sources, "runq=procfs") {
		t.Errorf("footprint %+v", fp)
	}
}
