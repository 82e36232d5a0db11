package profiling

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/flamegraph"
	"github.com/triage-agent/triage/internal/testenv"
)

// TestNodePerfMapNamesJITFrames profiles Node.js started with
// --perf-basic-prof running a hot JavaScript function: V8 writes
// /tmp/perf-PID.map, read through /proc/PID/root, and the function's name
// must appear in the profile (and the folded output), under node's own
// frames.
func TestNodePerfMapNamesJITFrames(t *testing.T) {
	requireRoot(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Unavailable(t, "node (Debian nodejs) not installed")
	}
	script := filepath.Join(repoRoot(t), "testdata", "flamegraph", "jit", "hot.js")
	// In a directory of its own: V8 may leave isolate-*.log files there.
	cmd := startTargetIn(t, t.TempDir(), node, "--perf-basic-prof", script, "30")
	pid := cmd.Process.Pid
	t.Cleanup(func() { os.Remove(fmt.Sprintf("/tmp/perf-%d.map", pid)) })
	// Let V8 compile the hot function (and write its map line) first.
	time.Sleep(500 * time.Millisecond)
	res, used := recordCPU(t, pid, 600*time.Millisecond, 499)
	if res.OnCPU == nil {
		t.Fatal("no on-CPU samples")
	}
	var total, named, underNode int64
	for _, s := range res.OnCPU.Sample {
		total += s.Value[0]
		names := stackNames(s)
		for i, n := range names {
			if strings.Contains(n, "triageHotLoop") {
				named += s.Value[0]
				// Below the JIT frames, node's own (C++) frames: the walk
				// went through the JIT code by frame pointer.
				for _, below := range names[i+1:] {
					if below == "main" || strings.HasPrefix(below, "node::") {
						underNode += s.Value[0]
						break
					}
				}
				break
			}
		}
	}
	t.Logf("%d samples for %v of CPU, %d with triageHotLoop, %d of them under node's frames", total, used, named, underNode)
	if len(res.OnCPU.Sample) > 0 {
		best := res.OnCPU.Sample[0]
		for _, s := range res.OnCPU.Sample {
			if s.Value[0] > best.Value[0] {
				best = s
			}
		}
		t.Logf("most frequent stack (x%d): %s", best.Value[0], strings.Join(stackNames(best), " <- "))
	}
	if 4*named < total {
		for _, s := range res.OnCPU.Sample[:min(6, len(res.OnCPU.Sample))] {
			t.Logf("sample x%d: %v", s.Value[0], stackNames(s))
		}
		t.Fatalf("triageHotLoop named in %d of %d samples, want at least a quarter", named, total)
	}
	if 2*underNode < named {
		t.Fatalf("only %d of %d JIT samples reach node's own frames", underNode, named)
	}
	paths, err := flamegraph.WriteFiles(filepath.Join(t.TempDir(), "node"), res.OnCPU, flamegraph.SVGOptions{})
	if err != nil {
		t.Fatal(err)
	}
	folded, _ := os.ReadFile(paths[1])
	if !strings.Contains(string(folded), "triageHotLoop") {
		t.Fatal("folded output lacks triageHotLoop")
	}
}
