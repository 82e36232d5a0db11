// Package testchild runs the test binary again as a child process in a
// role, so that a test can put work in a process it can kill, pause or
// renice: the role is an environment variable that the child's TestMain
// (or an init) reads before any test runs.
package testchild

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Command is the test binary, run again to run no test, with env
// ("NAME=value") added to this process's environment.
func Command(env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Start starts cmd and, unless it has been waited for by then, kills and
// reaps it when the test ends, so that a failed test leaves no child
// behind.
func Start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the test child: %v", err)
	}
	reapAtEnd(t, cmd)
}

// StartIdle starts cmd as Start does, under SCHED_IDLE: the child runs
// only on CPU time that nothing else on the machine wants, so that a load
// standing for work on other machines (clients of the agent) does not
// take the CPU from what the test measures; a runnable task of any other
// policy preempts it at once, which a nice value does not promise.
//
// The policy is set on a thread of this process locked for the purpose,
// which then forks the child: every thread of the child inherits the
// policy from its first instruction. The forking thread takes back the
// policy it had before StartIdle returns, so that no thread of this
// process is idle once the child runs; should that fail, the thread stays
// locked and ends with its goroutine, policy and all. Pdeathsig would fire
// when that thread ends, so a cmd that sets it is refused.
func StartIdle(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if cmd.SysProcAttr != nil && cmd.SysProcAttr.Pdeathsig != 0 {
		t.Fatal("starting the test child: Pdeathsig would kill it when the idle thread that forks it ends")
	}
	done := make(chan error, 1)
	go func() { done <- startOnIdleThread(cmd) }()
	if err := <-done; err != nil {
		t.Fatalf("starting the test child: %v", err)
	}
	reapAtEnd(t, cmd)
}

// startOnIdleThread starts cmd from the calling goroutine's thread under
// SCHED_IDLE and gives that thread its own policy back once cmd runs,
// before it returns: waiting for the thread to end instead, as this did
// first, raced with the caller's look at its threads. The thread is
// unlocked only after its policy is restored; one whose policy could not
// be restored stays locked, to end with the goroutine (the Go runtime
// ends a locked thread whose goroutine exits).
func startOnIdleThread(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	own, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return fmt.Errorf("policy of the forking thread: %w", err)
	}
	idle := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if err := unix.SchedSetAttr(0, &idle, 0); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("SCHED_IDLE for the forking thread: %w", err)
	}
	startErr := cmd.Start()
	if err := unix.SchedSetAttr(0, own, 0); err != nil {
		// Leaving SCHED_IDLE can need a privilege; the thread, locked
		// still, ends with this goroutine instead.
		return startErr
	}
	runtime.UnlockOSThread()
	return startErr
}

// reapAtEnd kills and reaps cmd when the test ends, unless it has been
// waited for by then.
func reapAtEnd(t testing.TB, cmd *exec.Cmd) {
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// Kill ends cmd with SIGKILL, as a crash would (no handler runs), and
// reaps it; its exit status is the signal, so Wait's error is not one.
func Kill(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing the test child: %v", err)
	}
	_ = cmd.Wait()
}

// Block never returns: a child's role that waits to be killed calls it.
// A bare select {} is not that: with no other goroutine the Go runtime
// finds every goroutine asleep and ends the process at once ("all
// goroutines are asleep - deadlock!"), which raced with the parent's look
// at the child (a test saw it with one thread, a zombie's). A sleeping
// goroutine holds a timer, which the runtime counts as a way out.
func Block() {
	for {
		time.Sleep(time.Hour)
	}
}
