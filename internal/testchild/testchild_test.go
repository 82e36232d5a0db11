package testchild

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// roleEnv makes the test binary print its role and wait to be killed.
const roleEnv = "TRIAGE_TESTCHILD_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		fmt.Println("role", role)
		select {}
	}
	os.Exit(m.Run())
}

// A child started in a role runs that role instead of the tests, with the
// parent's environment beside its own variable, and Kill ends it with
// SIGKILL.
func TestChildRunsItsRoleAndDiesOfSIGKILL(t *testing.T) {
	t.Setenv("TRIAGE_TESTCHILD_INHERITED", "yes")
	cmd := Command(roleEnv + "=waiter")
	if !strings.Contains(strings.Join(cmd.Env, "\n"), "TRIAGE_TESTCHILD_INHERITED=yes") {
		t.Fatalf("the child's environment lacks the parent's: %q", cmd.Env)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	Start(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "role waiter\n" {
		t.Fatalf("child said %q (%v), want its role", line, err)
	}
	Kill(t, cmd)
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", cmd.ProcessState)
	}
}

// A child still running when its test ends is killed and reaped by the
// cleanup Start registered.
func TestStartCleansUpAChildLeftRunning(t *testing.T) {
	var cmd *exec.Cmd
	t.Run("leaves it running", func(t *testing.T) {
		cmd = Command(roleEnv + "=orphan")
		Start(t, cmd)
	})
	if cmd.ProcessState == nil {
		t.Fatal("the child was not reaped when its test ended")
	}
	if err := cmd.Process.Signal(syscall.Signal(0)); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("signalling the ended child: %v, want os.ErrProcessDone", err)
	}
}
