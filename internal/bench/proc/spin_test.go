package proc

import (
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

func alive(pid int) bool {
	s := ProcessState(pid)
	return s != "" && s != "Z" && s != "X"
}
