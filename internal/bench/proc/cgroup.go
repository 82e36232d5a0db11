package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroup is a directory of its own in the cgroup v2 hierarchy: the
// unified mount of a pure v2 machine, or the v2 hierarchy beside v1 on a
// hybrid one (where it has no controllers but still groups and kills).
type cgroup struct{ path string }

// v2Roots are where a cgroup v2 hierarchy is mounted, in order of
// preference.
var v2Roots = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}

func newCgroup(name string) (*cgroup, error) {
	for _, root := range v2Roots {
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
			continue // a v1 hierarchy also has cgroup.procs
		}
		sweepStale(root)
		p := filepath.Join(root, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			return nil, fmt.Errorf("creating cgroup %s: %w", p, err)
		}
		return &cgroup{path: p}, nil
	}
	return nil, errors.New("no cgroup v2 hierarchy mounted")
}

func (c *cgroup) add(pid int) error {
	if err := os.WriteFile(filepath.Join(c.path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("moving pid %d into %s: %w", pid, c.path, err)
	}
	return nil
}

// kill kills every process in the cgroup (cgroup.kill, Linux 5.14+; older
// kernels: each pid it lists).
func (c *cgroup) kill() {
	if os.WriteFile(filepath.Join(c.path, "cgroup.kill"), []byte("1"), 0o644) == nil {
		return
	}
	b, _ := os.ReadFile(filepath.Join(c.path, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
}

// remove removes the (empty) cgroup; the kernel may take a moment to
// release the killed processes.
func (c *cgroup) remove() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = os.Remove(c.path); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", c.path, err)
}

// sweepStale removes the cgroups of load groups whose starter is gone (it
// was killed before it could Close): their processes died with it, and
// the empty directories would otherwise pile up.
func sweepStale(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "triage-*"))
	for _, d := range dirs {
		f := strings.Split(filepath.Base(d), "-")
		if len(f) < 4 {
			continue
		}
		pid, err := strconv.Atoi(f[len(f)-2])
		if err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		// Its processes die with their starter (Pdeathsig), but one that
		// is still exiting keeps the cgroup populated, and the kernel
		// refuses to remove it until the last thread is gone: where
		// nothing but exiting processes is left, give it the moment
		// remove allows. One that holds a live process is left alone (its
		// name could be someone else's).
		if onlyExiting(d) {
			_ = (&cgroup{path: d}).remove()
		}
	}
}

// onlyExiting says whether every process the cgroup dir lists is a zombie
// or gone: a multi-threaded process whose leader has exited is listed
// (and keeps the cgroup populated) until its other threads have exited
// too.
func onlyExiting(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return false
		}
		switch ProcessState(pid) {
		case "", "Z", "X":
		default:
			return false
		}
	}
	return true
}

// ProcessState is the state letter of process pid ("R", "S", "Z"...),
// read from /proc/PID/stat after the command name's closing parenthesis
// (the name may hold spaces and parentheses); "" when the process is gone
// or the line cannot be read.
func ProcessState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
