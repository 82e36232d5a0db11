package profiling

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testenv"
)

// foldPerfScript folds `perf script` output (one block per sample: a header
// line, then one "addr symbol+off (module)" line per frame, leaf first,
// blank line between samples) into self counts per leaf function.
func foldPerfScript(out []byte) (map[string]int64, error) {
	leaves := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inSample, haveLeaf := false, false
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			inSample, haveLeaf = false, false
			continue
		}
		if !inSample {
			inSample = true // header: comm pid [cpu] time: period event:
			continue
		}
		if haveLeaf {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("perf script frame line %q", line)
		}
		sym := f[1]
		if i := strings.LastIndex(sym, "+0x"); i > 0 {
			sym = sym[:i]
		}
		leaves[sym]++
		haveLeaf = true
	}
	return leaves, sc.Err()
}

func topN(m map[string]int64, n int) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	return names[:min(n, len(names))]
}

// TestTopFiveAgreesWithPerf profiles the same program over the same two
// seconds with triage and with `perf record -g` (software cpu-clock at the
// same 499 Hz). Agreement means: the same function first, and at least four
// of the five top self-time functions in common.
func TestTopFiveAgreesWithPerf(t *testing.T) {
	requireRoot(t)
	perf := lookPerf(t)
	bin := buildGoTarget(t)
	cmd := startTarget(t, bin, "-mode", "mix", "-duration", "30s")
	pid := cmd.Process.Pid
	data := filepath.Join(t.TempDir(), "perf.data")
	var res *Result
	alongsidePerf(t, []string{perf, "record", "-q", "-e", "cpu-clock", "-F", "499", "-g", "-p", fmt.Sprint(pid), "-o", data, "--", "sleep", "2"}, func() {
		res = record(t, pid, 2*time.Second, 499, false)
	})
	script := perfScript(t, perf, data, "comm,pid,tid,time,event,ip,sym")
	perfLeaves, err := foldPerfScript(script)
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := leafTotals(res.OnCPU, 0)
	pt, ot := topN(perfLeaves, 5), topN(ours, 5)
	t.Logf("perf top5:   %v", describe(pt, perfLeaves))
	t.Logf("triage top5: %v", describe(ot, ours))
	common := 0
	for _, a := range ot {
		for _, b := range pt {
			if a == b {
				common++
			}
		}
	}
	if len(pt) == 0 || len(ot) == 0 || pt[0] != ot[0] || common < 4 {
		t.Fatalf("top five disagree: perf %v, triage %v (%d in common)", pt, ot, common)
	}
	if ot[0] != "main.workA" {
		t.Fatalf("hottest function is %s, want main.workA", ot[0])
	}
}

func describe(names []string, m map[string]int64) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", n, m[n]))
	}
	return strings.Join(parts, " ")
}

func TestFoldPerfScript(t *testing.T) {
	in := "hotgo 1 [000] 1.0: 2004008 cpu-clock:\n\t  4a1b2c main.workA+0x1c (/tmp/hotgo)\n\t  4a1000 main.runMix+0x40 (/tmp/hotgo)\n\n" +
		"hotgo 1 [001] 1.1: 2004008 cpu-clock:\n\tffffffff81000000 read_zero+0x5 ([kernel.kallsyms])\n\t  4a1b2c main.readZero+0x1 (/tmp/hotgo)\n\n"
	got, err := foldPerfScript([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got["main.workA"] != 1 || got["read_zero"] != 1 || len(got) != 2 {
		t.Fatalf("fold = %v", got)
	}
}

// lookPerf is the path of Debian's perf (linux-perf), the peer profiler.
func lookPerf(t *testing.T) string {
	t.Helper()
	perf, err := exec.LookPath("perf")
	if err != nil {
		testenv.Unavailable(t, "perf (Debian linux-perf) not installed")
	}
	return perf
}

// alongsidePerf runs the `perf record` command line args while ours
// records the same target, and fails the test if perf fails.
func alongsidePerf(t *testing.T, args []string, ours func()) {
	t.Helper()
	perfCmd := exec.Command(args[0], args[1:]...)
	var perfOut bytes.Buffer
	perfCmd.Stdout, perfCmd.Stderr = &perfOut, &perfOut
	if err := perfCmd.Start(); err != nil {
		t.Fatalf("perf record: %v", err)
	}
	ours()
	if err := perfCmd.Wait(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, perfOut.String())
	}
}

// perfScript is `perf script` of the recording in data, with fields.
func perfScript(t *testing.T, perf, data, fields string) []byte {
	t.Helper()
	out, err := exec.Command(perf, "script", "-i", data, "-F", fields).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	return out
}
