package bpf

import (
	"context"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/bench/peer"
	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/internal/testenv"
)

var bpftraceRow = regexp.MustCompile(`^\[(\d+)([KMG]?)(?:, (\d+)([KMG]?))?\)?\]?\s+(\d+)\s`)

// parseBpftraceHist returns counts by bpftrace bucket index: [0] is 0,
// [1] is 1, [2, 4) is 2, [4, 8) is 3 ... (index = log2(lo)+1).
func parseBpftraceHist(out string) (counts [64]uint64, total uint64) {
	mult := map[string]uint64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
	for _, line := range strings.Split(out, "\n") {
		m := bpftraceRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		lo, _ := strconv.ParseUint(m[1], 10, 64)
		lo *= mult[m[2]]
		n, _ := strconv.ParseUint(m[5], 10, 64)
		idx := 0
		if lo >= 1 {
			idx = 1
			for v := lo; v > 1; v >>= 1 {
				idx++
			}
		}
		if idx < 64 {
			counts[idx] += n
			total += n
		}
	}
	return counts, total
}

func bucketQuantile(counts [64]uint64, total uint64, q float64) int {
	rank := q * float64(total)
	var seen float64
	for i, c := range counts {
		seen += float64(c)
		if c > 0 && seen >= rank {
			return i
		}
	}
	return 63
}

// TestRunqlatAgreesWithBpftrace runs bpftrace's runqlat and triage's
// run-queue histogram on the same overload at the same time: p50 and p99
// must fall in the same log2 microsecond bucket or a neighbouring one.
func TestRunqlatAgreesWithBpftrace(t *testing.T) {
	requireBPF(t)
	if _, err := exec.LookPath("bpftrace"); err != nil {
		testenv.Unavailable(t, "bpftrace not installed")
	}
	r := mustOpen(t, OpenRunqlat, RunqlatOptions{})

	const secs = 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bt, err := peer.StartRunqlat(ctx, secs)
	if err != nil {
		t.Fatal(err)
	}
	var before, after, ours Hist
	if err := r.Read(&before); err != nil {
		t.Fatal(err)
	}
	// Load for most of bpftrace's window; both see the same events.
	proc.SpinThreads(3*runtime.NumCPU(), (secs-1)*time.Second)
	out, err := bt.Wait()
	if err != nil {
		t.Fatalf("bpftrace: %v\n%s", err, out)
	}
	if err := r.Read(&after); err != nil {
		t.Fatal(err)
	}
	ours.Sub(&after, &before)
	theirs, total := parseBpftraceHist(out)
	if total < 100 || ours.Count() < 100 {
		t.Fatalf("too few samples: bpftrace %d, triage %d\n%s", total, ours.Count(), out)
	}
	for _, q := range []float64{0.5, 0.99} {
		tb := bucketQuantile(theirs, total, q)
		ob := bucketOfUs(ours.Quantile(q))
		t.Logf("p%.0f: bpftrace bucket %d, triage bucket %d (%.1f µs); samples %d vs %d", q*100, tb, ob, ours.Quantile(q)/1e3, total, ours.Count())
		if d := tb - ob; d < -1 || d > 1 {
			t.Errorf("p%.0f: bpftrace bucket %d vs triage %d: more than one log2 bucket apart\n%s", q*100, tb, ob, out)
		}
	}
}

func TestParseBpftraceHist(t *testing.T) {
	out := "@usecs: \n[0]  5 |@|\n[1]  6 |@|\n[2, 4)  7 |@|\n[1K, 2K)  8 |@|\n"
	c, n := parseBpftraceHist(out)
	if n != 26 || c[0] != 5 || c[1] != 6 || c[2] != 7 || c[11] != 8 {
		t.Fatalf("parsed %v total %d", c[:12], n)
	}
}
