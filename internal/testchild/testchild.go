// Package testchild runs the test binary again as a child process in a
// role, so that a test can put work in a process it can kill, pause or
// renice: the role is an environment variable that the child's TestMain
// (or an init) reads before any test runs.
package testchild

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
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
