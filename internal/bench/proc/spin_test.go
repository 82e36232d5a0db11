package proc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func selfCPUTime(t *testing.T) time.Duration {
	u, err := ReadUsage(Self)
	if err != nil {
		t.Fatal(err)
	}
	return u.CPU
}

func TestSpinThreadsBurnsCPU(t *testing.T) {
	cpu0, start := selfCPUTime(t), time.Now()
	SpinThreads(2, 200*time.Millisecond)
	wall, cpu := time.Since(start), selfCPUTime(t)-cpu0
	t.Logf("2 threads for 200 ms: %v wall, %v CPU", wall, cpu)
	if wall < 200*time.Millisecond {
		t.Errorf("returned after %v, before the deadline", wall)
	}
	// On a busy shared machine the threads get less than their 400 ms.
	if cpu < 50*time.Millisecond {
		t.Errorf("only %v of CPU time", cpu)
	}
}

// procState is the state letter of /proc/PID/stat, "" when the process
// is gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))[0]
}

func alive(pid int) bool {
	s := procState(pid)
	return s != "" && s != "Z" && s != "X"
}

func TestSpinnersSpinUntilClosed(t *testing.T) {
	s, err := StartSpinners(2)
	if err != nil {
		t.Fatal(err)
	}
	pids := s.Pids()
	time.Sleep(300 * time.Millisecond)
	for _, pid := range pids {
		u, err := ReadUsage(pid)
		t.Logf("spinner %d: state %s, %+v", pid, procState(pid), u)
		if err != nil || u.CPU == 0 {
			t.Errorf("spinner %d: %v of CPU after 300 ms (%v)", pid, u.CPU, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("spinner %d still runs after Close", pid)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSpinnersBounded(t *testing.T) {
	if _, err := StartSpinners(-1); err == nil {
		t.Error("-1 spinners accepted")
	}
	if _, err := StartSpinners(1 << 20); err == nil {
		t.Error("2^20 spinners accepted")
	}
}

const helperEnv = "TRIAGE_LOAD_HELPER"

// TestSpinnersHelperProcess is not a test: it is the entry point of the
// child that TestSpinnersDieWithTheirParent kills. It starts two spinners,
// prints their pids and waits to be killed, without closing them.
func TestSpinnersHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process entry point; runs only when re-executed by TestSpinnersDieWithTheirParent")
	}
	s, err := StartSpinners(2)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(strings.Trim(fmt.Sprint(s.Pids()), "[]"))
	time.Sleep(time.Minute)
	os.Exit(2)
}

func TestSpinnersDieWithTheirParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpinnersHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q %v", line, err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper said %q", line)
		}
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("spinner %d is not running while its parent lives", pid)
		}
	}
	cmd.Process.Signal(syscall.SIGKILL) // no Close: the parent dies as a crash would
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, pid := range pids {
		if alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL) // this test's own orphan
			t.Errorf("spinner %d outlived its parent by 5 s", pid)
		}
	}
}
