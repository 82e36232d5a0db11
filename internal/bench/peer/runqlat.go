// Package peer runs the tools that triage's probes are compared with:
// bpftrace's runqlat, for `triage bench signals` (its cost per context
// switch) and bpf's tests (its histogram). It depends on the standard
// library only, so that tests of bpf can use it.
package peer

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/triage-agent/triage/bpf/tracefs"
)

// RunqlatScript is bpftrace's runqlat tool (tools/runqlat.bt) reduced to
// its histogram, exiting by itself after secs seconds, with one fix: it
// ignores the idle task (pid 0), as bcc's runqlat does and bpftrace
// PR #4291 proposes. The stock script times the idle task from when the CPU
// left idle to when it went back, so its p99 is the length of busy spans,
// not a run-queue wait (docs/signals.md, "Peer comparison with bpftrace",
// shows the same script).
func RunqlatScript(secs int) string {
	return `
tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { @qtime[args->pid] = nsecs; }
tracepoint:sched:sched_switch {
  if (args->prev_state == 0 && args->prev_pid != 0) { @qtime[args->prev_pid] = nsecs; }
  $ns = @qtime[args->next_pid];
  if ($ns) { @usecs = hist((nsecs - $ns) / 1000); }
  delete(@qtime[args->next_pid]);
}
interval:s:` + strconv.Itoa(secs) + ` { exit(); }
END { clear(@qtime); }
`
}

// Bpftrace is a running bpftrace.
type Bpftrace struct {
	cmd *exec.Cmd
	out *bufio.Scanner
}

// StartRunqlat runs bpftrace (from PATH) with RunqlatScript(secs) and
// returns once its probes are attached, mounting tracefs first where none
// is (tracefs.Mount); ctx ends it early.
func StartRunqlat(ctx context.Context, secs int) (*Bpftrace, error) {
	if secs < 1 {
		return nil, fmt.Errorf("bpftrace runqlat for %d s: want at least 1", secs)
	}
	if err := tracefs.Mount(); err != nil {
		return nil, fmt.Errorf("bpftrace runqlat: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bpftrace", "-e", RunqlatScript(secs))
	var stderr head
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting bpftrace: %w", err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Attaching") {
			return &Bpftrace{cmd: cmd, out: sc}, nil
		}
	}
	cmd.Wait() // after it, stderr holds what bpftrace wrote
	return nil, fmt.Errorf("bpftrace did not attach: %s", strings.TrimSpace(string(stderr.b)))
}

// headBytes is how much of bpftrace's stderr an error quotes.
const headBytes = 2048

// head keeps the first headBytes written to it and drops the rest, so a
// chatty bpftrace cannot grow it without bound.
type head struct{ b []byte }

func (h *head) Write(p []byte) (int, error) {
	if room := headBytes - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Wait reads bpftrace's output until it exits by itself, and returns the
// output (the histogram) and the exit error.
func (b *Bpftrace) Wait() (string, error) {
	var out strings.Builder
	for b.out.Scan() {
		out.WriteString(b.out.Text())
		out.WriteByte('\n')
	}
	return out.String(), b.cmd.Wait()
}

// Stop interrupts bpftrace, as Ctrl-C would, and waits for it to exit; its
// output is discarded. An interrupt that arrives while bpftrace is still
// attaching is lost (bpftrace 0.17 does not see it), so it is sent again
// every half second until bpftrace exits.
func (b *Bpftrace) Stop() {
	drained := make(chan struct{})
	go func() {
		for b.out.Scan() {
		}
		close(drained)
	}()
	resend := time.NewTicker(500 * time.Millisecond)
	defer resend.Stop()
	for {
		b.cmd.Process.Signal(os.Interrupt)
		select {
		case <-drained:
			b.cmd.Wait()
			return
		case <-resend.C:
		}
	}
}
