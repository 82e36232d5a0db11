package faulttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/bpf/cgroup2"
)

// Cgroup2Root is where the cgroup v2 hierarchy is mounted: the unified
// mount of a cgroup v2 machine, or the v2 hierarchy beside v1 on a hybrid
// one (/sys/fs/cgroup/unified). On a machine that mounts cgroup v1 only it
// mounts the v2 hierarchy itself, under t's temporary directory: every
// kernel with cgroups has it, and even with every controller bound to v1
// it groups tasks and gives each cgroup the id (its directory's inode)
// that the BPF programs read from a task.
func Cgroup2Root(t testing.TB) string {
	t.Helper()
	RequireRoot(t, "making cgroups")
	if root, ok := mountedCgroup2(); ok {
		return root
	}
	dir := filepath.Join(t.TempDir(), "cgroup2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("cgroup2", dir, "cgroup2", 0, ""); err != nil {
		t.Fatalf("no cgroup v2 hierarchy mounted, and mounting one on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// mountedCgroup2 finds a mount of the whole cgroup v2 hierarchy (not a
// bind mount of one cgroup) in /proc/self/mountinfo.
func mountedCgroup2() (string, bool) {
	mounts, err := cgroup2.Mounts()
	if err != nil {
		return "", false
	}
	for _, m := range mounts {
		if m.Root == "/" {
			return m.Point, true
		}
	}
	return "", false
}

// Cgroups makes n cgroups under root and removes them at cleanup (after
// the cleanups registered later, so processes moved in by the test have
// been stopped by then).
func Cgroups(t testing.TB, root string, n int) []string {
	t.Helper()
	base := filepath.Join(root, fmt.Sprintf("triage-fault-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatalf("creating cgroup %s: %v", base, err)
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(base, strconv.Itoa(i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			t.Fatalf("creating cgroup %d of %d: %v", i, n, err)
		}
	}
	t.Cleanup(func() {
		for _, d := range append(dirs, base) {
			removeCgroup(t, d)
		}
	})
	return dirs
}

// MoveToCgroup moves process pid into the cgroup dir.
func MoveToCgroup(t testing.TB, dir string, pid int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("moving pid %d into %s: %v", pid, dir, err)
	}
}

// removeCgroup removes an empty cgroup, retrying while the kernel releases
// processes that just exited.
func removeCgroup(t testing.TB, dir string) {
	var err error
	for range 100 {
		if err = os.Remove(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("removing cgroup %s: %v", dir, err)
}
