package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/triage-agent/triage/internal/testchild"
)

func TestLoadSpinsAndWritesThenAllDie(t *testing.T) {
	dir := t.TempDir()
	g, err := StartLoad(LoadConfig{Spinners: 1.5, Writers: 1, Dir: dir, Nice: 10, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	pids := g.PIDs()
	if len(pids) != 3 {
		t.Fatalf("%d processes, want 2 spinners and 1 writer", len(pids))
	}
	cpu := func(pid int) time.Duration {
		u, err := ReadUsage(pid)
		if err != nil {
			t.Fatalf("usage of %d: %v", pid, err)
		}
		return u.CPU
	}
	before := []time.Duration{cpu(pids[0]), cpu(pids[1])}
	time.Sleep(1500 * time.Millisecond)
	full, part := cpu(pids[0])-before[0], cpu(pids[1])-before[1]
	// The machine may be shared, so only ask that the full spinner ran and
	// ran more than the half one.
	if full < 200*time.Millisecond || part >= full {
		t.Errorf("CPU time in 1.5 s: full spinner %v, half spinner %v", full, part)
	}
	for _, pid := range pids {
		nice, err := syscall.Getpriority(syscall.PRIO_PROCESS, pid)
		// The raw syscall returns 20 - nice.
		if err != nil || 20-nice != 10 {
			t.Errorf("pid %d: nice %d (%v), want 10", pid, 20-nice, err)
		}
	}
	if p := g.CgroupPath(); p != "" {
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if n := len(strings.Fields(string(b))); n != 3 {
			t.Errorf("cgroup %s holds %d processes, want 3", p, n)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "triage-load-*", "triage-load-writer-*.dat"))
	if len(files) != 1 {
		t.Fatalf("writer files: %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() < 64<<10 {
		t.Errorf("writer file %v: %v", fi, err)
	}
	cg := g.CgroupPath()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d outlived Close", pid)
		}
	}
	if cg != "" {
		if _, err := os.Stat(cg); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind", cg)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("writers left %d entries in %s", len(left), dir)
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []LoadConfig{{Spinners: -1}, {Writers: -2}, {Spinners: 1e9}} {
		if _, err := StartLoad(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: got %v, want ErrBadConfig", c, err)
		}
	}
}

// envStarter makes the test binary, re-executed, start a group and print
// its pids, then wait to be killed.
const envStarter = "TRIAGE_LOAD_TEST_STARTER"

func TestMain(m *testing.M) {
	if os.Getenv(envStarter) != "" {
		g, err := StartLoad(LoadConfig{Spinners: 2, Writers: 1, Name: "orphan-test"})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(strings.Trim(fmt.Sprint(g.PIDs()), "[]"))
		testchild.Block()
	}
	os.Exit(m.Run())
}

func TestLoadDiesWithItsStarter(t *testing.T) {
	cmd := testchild.Command(envStarter + "=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	testchild.Start(t, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("starter said nothing: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("starter said %q", line)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 3 {
		t.Fatalf("starter started %v", pids)
	}
	testchild.Kill(t, cmd)
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("pid %d outlived its starter, killed with SIGKILL", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// The next group sweeps the dead starter's cgroup away.
	g, err := StartLoad(LoadConfig{Name: "sweep"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, root := range v2Roots {
		if left, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("triage-orphan-test-%d-*", cmd.Process.Pid))); len(left) != 0 {
			t.Errorf("the dead starter's cgroup is still there: %v", left)
		}
	}
}
