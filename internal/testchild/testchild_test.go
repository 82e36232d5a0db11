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
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/internal/bench/proc"
)

// roleEnv makes the test binary print its role and wait to be killed.
const roleEnv = "TRIAGE_TESTCHILD_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		fmt.Println("role", role)
		Block()
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
	// Still waiting, not dead of a deadlock (what select {} gave).
	time.Sleep(200 * time.Millisecond)
	if state := proc.ProcessState(cmd.Process.Pid); state != "S" {
		t.Fatalf("child 200 ms after its role: state %q, want S (sleeping)", state)
	}
	Kill(t, cmd)
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want SIGKILL", cmd.ProcessState)
	}
}

// A child started idle runs every thread under SCHED_IDLE, and no thread
// of the process that started it is left under that policy.
func TestStartIdleRunsEveryThreadOfTheChildIdleAndNoneOfOurs(t *testing.T) {
	cmd := Command(roleEnv + "=idler")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	StartIdle(t, cmd)
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "role idler\n" {
		t.Fatalf("child said %q (%v), want its role", line, err)
	}
	child, err := threadPolicies(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if len(child) < 2 {
		t.Fatalf("the child has %d threads, want the Go runtime's several", len(child))
	}
	for tid, p := range child {
		if p != unix.SCHED_IDLE {
			t.Errorf("child thread %d has policy %d, want SCHED_IDLE (%d)", tid, p, unix.SCHED_IDLE)
		}
	}
	ours, err := threadPolicies(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for tid, p := range ours {
		if p == unix.SCHED_IDLE {
			t.Errorf("thread %d of the test process was left under SCHED_IDLE", tid)
		}
	}
	Kill(t, cmd)
}

// StartIdle refuses a child whose Pdeathsig the forking thread's end
// would fire.
func TestStartIdleRefusesPdeathsig(t *testing.T) {
	cmd := Command(roleEnv + "=never")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		StartIdle(ft, cmd)
	}()
	if !strings.Contains(ft.msg, "Pdeathsig") || cmd.Process != nil {
		t.Fatalf("StartIdle said %q and started %v, want a refusal naming Pdeathsig", ft.msg, cmd.Process)
	}
}

// fatalRecorder records Fatal's message and stops the caller as Fatal
// does, by panicking (recovered by the test).
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(f)
}

func (f *fatalRecorder) Helper() {}

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

// threadPolicies are the scheduling policies of pid's threads, by thread
// id.
func threadPolicies(pid int) (map[int]uint32, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	out := make(map[int]uint32, len(tasks))
	for _, e := range tasks {
		var tid int
		if _, err := fmt.Sscan(e.Name(), &tid); err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // the thread ended since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("policy of thread %d: %w", tid, err)
		}
		out[tid] = attr.Policy
	}
	return out, nil
}
