package load

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Config describes one group of load processes. The zero value of each
// field means its default.
type Config struct {
	// Spinners is the number of always-runnable processes; a fractional
	// part is one more process runnable that fraction of the time.
	Spinners float64
	// Writers is the number of processes writing and fsync'ing WriteBytes
	// in a loop in Dir.
	Writers    int
	Dir        string // default os.TempDir()
	WriteBytes int    // default 64 KiB
	// Nice of every process (the workers' nice in bench e2e); default 0.
	Nice int
	// CPUs, when set, is the CPU set the processes may run on.
	CPUs []int
	// Name labels the group's cgroup.
	Name string
}

// ErrBadConfig reports a Config that cannot start.
var ErrBadConfig = errors.New("load: bad config")

// Group is a running set of load processes.
type Group struct {
	procs  []*exec.Cmd
	cgroup *cgroup
	dir    string
}

// Start starts the processes of cfg. They run until Close.
func Start(cfg Config) (*Group, error) {
	if !(cfg.Spinners >= 0) || cfg.Spinners > 4096 || cfg.Writers < 0 || cfg.Writers > 4096 {
		return nil, fmt.Errorf("%w: %v spinners, %d writers", ErrBadConfig, cfg.Spinners, cfg.Writers)
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
	g := &Group{}
	if cfg.Writers > 0 {
		dir, err := os.MkdirTemp(cfg.Dir, "triage-load-")
		if err != nil {
			return nil, fmt.Errorf("load: writers' directory: %w", err)
		}
		g.dir = dir
	}
	// A cgroup of their own, where the machine lets us make one: the
	// neighbours are then one unit to account and to kill. Without one the
	// processes are still killed one by one.
	g.cgroup, _ = newCgroup(fmt.Sprintf("triage-%s-%d-%d", cfg.Name, os.Getpid(), time.Now().UnixNano()))
	whole, frac := math.Modf(cfg.Spinners)
	for i := 0; i < int(whole); i++ {
		if err := g.start(cfg, "spin", envDuty+"=1"); err != nil {
			return nil, errors.Join(err, g.Close())
		}
	}
	if frac > 1e-3 {
		if err := g.start(cfg, "spin", envDuty+"="+strconv.FormatFloat(frac, 'f', 4, 64)); err != nil {
			return nil, errors.Join(err, g.Close())
		}
	}
	for i := 0; i < cfg.Writers; i++ {
		if err := g.start(cfg, "write", envDir+"="+g.dir, envBytes+"="+strconv.Itoa(cfg.WriteBytes)); err != nil {
			return nil, errors.Join(err, g.Close())
		}
	}
	return g, nil
}

func (g *Group) start(cfg Config, kind string, env ...string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("load: finding this binary: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envChild+"="+kind, "GOMAXPROCS=1")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("load: starting a %s process: %w", kind, err)
	}
	g.procs = append(g.procs, cmd)
	pid := cmd.Process.Pid
	if err := unix.Setpriority(unix.PRIO_PROCESS, pid, cfg.Nice); err != nil {
		return fmt.Errorf("load: nice %d for pid %d: %w", cfg.Nice, pid, err)
	}
	if len(cfg.CPUs) > 0 {
		var set unix.CPUSet
		for _, c := range cfg.CPUs {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return fmt.Errorf("load: CPU set %v for pid %d: %w", cfg.CPUs, pid, err)
		}
	}
	if g.cgroup != nil {
		if err := g.cgroup.add(pid); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	return nil
}

// PIDs are the group's processes.
func (g *Group) PIDs() []int {
	out := make([]int, 0, len(g.procs))
	for _, c := range g.procs {
		out = append(out, c.Process.Pid)
	}
	return out
}

// CgroupPath is the group's cgroup directory, "" without one.
func (g *Group) CgroupPath() string {
	if g.cgroup == nil {
		return ""
	}
	return g.cgroup.path
}

// Close kills every process of the group, waits for them and removes
// what they left: the cgroup and the writers' directory.
func (g *Group) Close() error {
	if g == nil {
		return nil
	}
	if g.cgroup != nil {
		g.cgroup.kill()
	}
	for _, c := range g.procs {
		_ = c.Process.Kill()
	}
	for _, c := range g.procs {
		_ = c.Wait()
	}
	g.procs = nil
	var errs []error
	if g.cgroup != nil {
		errs = append(errs, g.cgroup.remove())
		g.cgroup = nil
	}
	if g.dir != "" {
		errs = append(errs, os.RemoveAll(g.dir))
		g.dir = ""
	}
	return errors.Join(errs...)
}
