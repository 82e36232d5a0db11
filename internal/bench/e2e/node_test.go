package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/triage-agent/triage/train"
)

func v2Scenario(t *testing.T, cpus int, extra string) *train.Scenario {
	t.Helper()
	src := fmt.Sprintf(`{"name":"v2-test","seed":5,"duration_s":6,"workers":2,"node":{"cpus":%d},
	 "arrival":{"process":"poisson","rate_per_s":40},
	 "classes":[{"name":"cpu","share":0.5,"sla_ms":200,"cost_ms":{"dist":"constant","value":10}},
	            {"name":"io","share":0.5,"sla_ms":200,"io_share":0.8,"cost_ms":{"dist":"constant","value":10}}]%s}`, cpus, extra)
	sc, err := train.ParseScenario([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestNodeWithMoreCPUsThanTheMachineIsRefused(t *testing.T) {
	sc := v2Scenario(t, runtime.NumCPU()+1, "")
	_, err := Run(context.Background(), Config{Scenario: sc, TimeScale: 1})
	if !errors.Is(err, ErrTooManyCPUs) || !strings.Contains(err.Error(), "node.cpus") {
		t.Fatalf("got %v, want ErrTooManyCPUs naming node.cpus", err)
	}
}

// neighbourCgroups lists the cgroups the played interference made.
func neighbourCgroups() []string {
	var out []string
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		m, _ := filepath.Glob(filepath.Join(root, "triage-neighbour-*"))
		out = append(out, m...)
	}
	return out
}

// A v2 run on one CPU with a CPU neighbour and a writer storm in its
// second half: tasks in the interference take longer than before it, the
// neighbours' cgroups are gone when Run returns, and so are the files.
func TestInterferenceIsPlayedForRealAndCleanedUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("neighbours in a cgroup of their own need root")
	}
	sc := v2Scenario(t, 1, `,"interference":[{"kind":"cpu","at_s":3,"for_s":3,"threads":2},{"kind":"io","at_s":3,"for_s":3,"writers":4}]`)
	dir := t.TempDir()
	res, err := Run(context.Background(), Config{Scenario: sc, TimeScale: 1, Rule: train.ReserveRule{}, IODir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var before, during [2][]float64 // per class: service times before and in the interference
	for i := range res.Outcomes {
		o := &res.Outcomes[i]
		if !o.Finished {
			continue
		}
		switch {
		case o.FinishMs < 2900:
			before[o.Class] = append(before[o.Class], o.ServiceMs())
		case o.StartMs > 3100:
			during[o.Class] = append(during[o.Class], o.ServiceMs())
		}
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(max(1, len(xs)))
	}
	for c, name := range []string{"cpu", "io"} {
		b, d := mean(before[c]), mean(during[c])
		t.Logf("class %s: mean service %.1f ms before (%d tasks), %.1f ms in the interference (%d tasks)", name, b, len(before[c]), d, len(during[c]))
		if len(before[c]) < 5 || len(during[c]) < 5 || d < 1.3*b {
			t.Errorf("class %s: interference did not slow it: %.1f ms before, %.1f ms during", name, b, d)
		}
	}
	// The real run's metrics count its tasks per period, as the
	// simulator's do: quiet, then the interference to the end.
	if pp := res.Metrics.PerPeriod; len(pp) != len(sc.Periods()) || len(pp) != 2 {
		t.Errorf("per-period counts %+v for periods %+v", pp, sc.Periods())
	} else if n := pp[0].Tasks + pp[1].Tasks; n != len(res.Outcomes) {
		t.Errorf("periods hold %d tasks, the run %d", n, len(res.Outcomes))
	}
	if res.IOWriteMs <= 0 {
		t.Errorf("the run's I/O unit %v ms: not measured", res.IOWriteMs)
	}
	if left := neighbourCgroups(); len(left) != 0 {
		t.Errorf("neighbour cgroups left behind: %v", left)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the run left %d entries in its I/O directory", len(left))
	}
}

// A node given its I/O unit keeps it (Bench gives every run the one it
// measured); without one it measures its own on the disk of dir.
func TestNodeKeepsAGivenIOUnitElseMeasuresOne(t *testing.T) {
	sc := v2Scenario(t, 1, "")
	dir := t.TempDir()
	given, err := newNode(sc, dir, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	defer given.close()
	if given.writeMs != 0.5 {
		t.Errorf("given 0.5 ms, the node counts in %v ms", given.writeMs)
	}
	measured, err := newNode(sc, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer measured.close()
	if !(measured.writeMs > 0) {
		t.Errorf("measured unit %v ms", measured.writeMs)
	}
}
