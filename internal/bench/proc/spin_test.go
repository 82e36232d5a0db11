package proc

import (
	"fmt"
	"os"
	"strings"
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
