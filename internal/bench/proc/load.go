package proc

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A Load is a set of processes that put a controlled load on the node:
// always-runnable spinners (CPU contention) and writers that write and
// fsync WriteBytes in a loop (disk contention), at a nice value and on a
// CPU set, in a cgroup of their own where the machine has one. They are
// this binary re-executed (child.go), so any binary that links this
// package can start them without a helper program on disk.
//
// They never outlive their starter: each is started with a parent-death
// SIGKILL, from a thread that is held until Close (the signal fires when
// the forking thread exits, and the Go runtime ends a thread whose
// goroutine exits locked to it); each also exits when it finds itself
// orphaned; and Close kills them all (through cgroup.kill where there is
// one).
type Load struct {
	cmds    []*exec.Cmd
	cgroup  *cgroup
	dir     string
	release chan struct{} // ends the goroutine that holds the forking thread
}

// LoadConfig describes a Load; the zero value of each field means its
// default.
type LoadConfig struct {
	// Spinners is the number of always-runnable processes; a fractional
	// part is one more process runnable that fraction of the time.
	Spinners float64
	// Bursty is the number of processes that alternate bursts of
	// spinning, exponential with a mean of BurstMs of wall time (default
	// 5 ms), with exponential sleeps, runnable BurstyDuty of the time
	// (in (0, 1]) each and independently of each other: threads that come
	// and go, as an executor's workers do.
	Bursty     int
	BurstyDuty float64
	BurstMs    float64
	// Writers is the number of processes writing and fsync'ing WriteBytes
	// in a loop in a directory of their own under Dir.
	Writers    int
	Dir        string // default os.TempDir()
	WriteBytes int    // default 64 KiB
	// Nice of every process (the workers' nice in bench e2e); default 0.
	Nice int
	// CPUs, when set, is the CPU set the processes may run on.
	CPUs []int
	// Name labels the load's cgroup.
	Name string
}

// ErrBadConfig reports a LoadConfig that cannot start.
var ErrBadConfig = errors.New("proc: bad config")

const maxLoadProcs = 4096

// StartLoad starts the processes of cfg. They run until Close.
func StartLoad(cfg LoadConfig) (*Load, error) {
	if !(cfg.Spinners >= 0) || cfg.Spinners > maxLoadProcs || cfg.Writers < 0 || cfg.Writers > maxLoadProcs {
		return nil, fmt.Errorf("%w: %v spinners, %d writers (each 0..%d)", ErrBadConfig, cfg.Spinners, cfg.Writers, maxLoadProcs)
	}
	if cfg.Bursty < 0 || cfg.Bursty > maxLoadProcs || (cfg.Bursty > 0 && !(cfg.BurstyDuty > 0 && cfg.BurstyDuty <= 1)) || !(cfg.BurstMs >= 0) || math.IsInf(cfg.BurstMs, 1) {
		return nil, fmt.Errorf("%w: %d bursty processes at duty %v, bursts of %v ms (0..%d processes, duty in (0, 1])", ErrBadConfig, cfg.Bursty, cfg.BurstyDuty, cfg.BurstMs, maxLoadProcs)
	}
	if cfg.BurstMs == 0 {
		cfg.BurstMs = 5
	}
	if cfg.WriteBytes == 0 {
		cfg.WriteBytes = 64 << 10
	}
	if cfg.Dir == "" {
		cfg.Dir = os.TempDir()
	}
	if cfg.Name == "" {
		cfg.Name = "load"
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("proc: finding this binary: %w", err)
	}
	l := &Load{release: make(chan struct{})}
	if cfg.Writers > 0 {
		if l.dir, err = os.MkdirTemp(cfg.Dir, "triage-load-"); err != nil {
			return nil, fmt.Errorf("proc: the writers' directory: %w", err)
		}
	}
	// A cgroup of their own, where the machine lets us make one: the load
	// is then one unit to account and to kill. Without one the processes
	// are still killed one by one.
	l.cgroup, _ = newCgroup(fmt.Sprintf("triage-%s-%d-%d", cfg.Name, os.Getpid(), time.Now().UnixNano()))

	var kinds [][]string // each process's environment
	whole, frac := math.Modf(cfg.Spinners)
	for i := 0; i < int(whole); i++ {
		kinds = append(kinds, []string{envChild + "=spin", envDuty + "=1"})
	}
	if frac > 1e-3 {
		kinds = append(kinds, []string{envChild + "=spin", envDuty + "=" + strconv.FormatFloat(frac, 'f', 4, 64)})
	}
	for i := 0; i < cfg.Bursty; i++ {
		kinds = append(kinds, []string{envChild + "=spin", envDuty + "=" + strconv.FormatFloat(cfg.BurstyDuty, 'f', 4, 64),
			envBurst + "=" + strconv.FormatFloat(cfg.BurstMs, 'f', 3, 64)})
	}
	for i := 0; i < cfg.Writers; i++ {
		kinds = append(kinds, []string{envChild + "=write", envDir + "=" + l.dir, envBytes + "=" + strconv.Itoa(cfg.WriteBytes)})
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for _, env := range kinds {
			if err := l.start(self, cfg, env); err != nil {
				started <- err
				<-l.release
				return
			}
		}
		started <- nil
		<-l.release
	}()
	if err := <-started; err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

func (l *Load) start(self string, cfg LoadConfig, env []string) error {
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS=1"), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("proc: starting a load process (%v): %w", env[0], err)
	}
	l.cmds = append(l.cmds, cmd)
	pid := cmd.Process.Pid
	if err := unix.Setpriority(unix.PRIO_PROCESS, pid, cfg.Nice); err != nil {
		return fmt.Errorf("proc: nice %d for pid %d: %w", cfg.Nice, pid, err)
	}
	if len(cfg.CPUs) > 0 {
		var set unix.CPUSet
		for _, c := range cfg.CPUs {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return fmt.Errorf("proc: CPU set %v for pid %d: %w", cfg.CPUs, pid, err)
		}
	}
	if l.cgroup != nil {
		if err := l.cgroup.add(pid); err != nil {
			return fmt.Errorf("proc: %w", err)
		}
	}
	return nil
}

// PIDs are the load's processes.
func (l *Load) PIDs() []int {
	out := make([]int, 0, len(l.cmds))
	for _, c := range l.cmds {
		out = append(out, c.Process.Pid)
	}
	return out
}

// CgroupPath is the load's cgroup directory, "" without one.
func (l *Load) CgroupPath() string {
	if l.cgroup == nil {
		return ""
	}
	return l.cgroup.path
}

// Close kills every process of the load, waits for them and removes what
// they left: the cgroup and the writers' directory. A second Close does
// nothing.
func (l *Load) Close() error {
	if l == nil || l.release == nil {
		return nil
	}
	if l.cgroup != nil {
		l.cgroup.kill()
	}
	for _, c := range l.cmds {
		_ = c.Process.Kill()
	}
	for _, c := range l.cmds {
		_ = c.Wait() // the error is the SIGKILL just sent
	}
	l.cmds = nil
	close(l.release)
	l.release = nil
	var errs []error
	if l.cgroup != nil {
		errs = append(errs, l.cgroup.remove())
		l.cgroup = nil
	}
	if l.dir != "" {
		errs = append(errs, os.RemoveAll(l.dir))
		l.dir = ""
	}
	return errors.Join(errs...)
}
