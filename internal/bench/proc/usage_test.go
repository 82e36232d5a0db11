package proc

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestReadUsageSelf(t *testing.T) {
	u0, err := ReadUsage(Self)
	if err != nil {
		t.Fatal(err)
	}
	x := uint64(1)
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
		x = x*6364136223846793005 + 1
	}
	u1, err := ReadUsage(Self)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v -> %+v (%d)", u0, u1, x&1)
	if u1.CPU <= u0.CPU {
		t.Errorf("30 ms of spinning added no CPU time: %v -> %v", u0.CPU, u1.CPU)
	}
	if u1.RSS < 1<<20 || u1.PeakRSS < u1.RSS {
		t.Errorf("RSS %d, peak %d: want at least 1 MiB and peak >= RSS", u1.RSS, u1.PeakRSS)
	}
}

func TestReadUsageOfChild(t *testing.T) {
	// A shell that spins for a while, then sleeps until it is killed.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo spun; sleep 30")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 16)
	if n, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "spun") {
		t.Fatalf("child: %q %v", buf[:n], err)
	}
	u, err := ReadUsage(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", u)
	if u.CPU <= 0 || u.CPU%(10*time.Millisecond) != 0 {
		t.Errorf("child CPU %v: want a positive number of 10 ms ticks", u.CPU)
	}
	if u.RSS <= 0 || u.PeakRSS < u.RSS {
		t.Errorf("child RSS %d, peak %d", u.RSS, u.PeakRSS)
	}
}

func TestReadUsageOfNoProcess(t *testing.T) {
	// Pids are below 2^22 on Linux (pid_max's ceiling).
	u, err := ReadUsage(1 << 23)
	if err == nil || u != (Usage{}) {
		t.Fatalf("usage of no process: %+v, %v; want zero and an error", u, err)
	}
}
