package peer

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testenv"
)

// bpftrace attaches, counts the machine's own context switches for a
// second, exits by itself and prints the histogram; then a long run ends at
// once on Stop, even right after the attach, when bpftrace does not yet see
// an interrupt.
func TestRunqlatRunsAndStops(t *testing.T) {
	testenv.RequireBPF(t, "bpftrace needs root")
	if _, err := exec.LookPath("bpftrace"); err != nil {
		testenv.Unavailable(t, "bpftrace not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bt, err := StartRunqlat(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := bt.Wait()
	if err != nil {
		t.Fatalf("bpftrace: %v\n%s", err, out)
	}
	if !strings.Contains(out, "@usecs:") || strings.Contains(out, "@qtime") {
		t.Fatalf("want the @usecs histogram and no @qtime map:\n%s", out)
	}

	if bt, err = StartRunqlat(ctx, 120); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	bt.Stop()
	t.Logf("stopped in %v", time.Since(start))
	if el := time.Since(start); el > 10*time.Second || ctx.Err() != nil || bt.cmd.ProcessState == nil {
		t.Fatalf("Stop took %v (context: %v, process state %v)", el, ctx.Err(), bt.cmd.ProcessState)
	}
}

func TestRunqlatScriptExitsAfterSecs(t *testing.T) {
	if s := RunqlatScript(7); !strings.Contains(s, "interval:s:7 { exit(); }") || !strings.Contains(s, "args->prev_pid != 0") {
		t.Fatalf("script:\n%s", s)
	}
	if _, err := StartRunqlat(context.Background(), 0); err == nil {
		t.Fatal("a 0 s run accepted")
	}
}

// What bpftrace writes to stderr is kept up to headBytes, the rest
// dropped, and every write reports itself whole so the copy never fails.
func TestHeadKeepsTheFirstBytesOnly(t *testing.T) {
	var h head
	for range 3 {
		if n, err := h.Write(make([]byte, headBytes/2+1)); n != headBytes/2+1 || err != nil {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, headBytes/2+1)
		}
	}
	if len(h.b) != headBytes {
		t.Fatalf("kept %d bytes, want %d", len(h.b), headBytes)
	}
}
