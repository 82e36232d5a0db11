package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/triage-agent/triage/bpf/cgroup2"
)

// ErrNoCgroup2 means no cgroup v2 hierarchy is mounted: the in-kernel
// cgroup filter (bpf_get_current_cgroup_id) only knows cgroup v2.
var ErrNoCgroup2 = errors.New("no cgroup v2 hierarchy mounted")

const cgroup2Magic = 0x63677270

// Cgroup2Root returns where the cgroup v2 hierarchy is mounted:
// /sys/fs/cgroup on unified systems, /sys/fs/cgroup/unified on hybrid ones.
func Cgroup2Root() (string, error) {
	mounts, err := cgroup2.Mounts()
	if err != nil {
		return "", err
	}
	if len(mounts) == 0 {
		return "", ErrNoCgroup2
	}
	return mounts[0].Point, nil
}

// CgroupFromPath returns the cgroup v2 id of a cgroup directory (its inode
// number, which is what bpf_get_current_cgroup_id returns) and its depth
// below the hierarchy's root (root = 0). path may be absolute (under the
// cgroup2 mount) or relative to it ("system.slice/nginx.service").
func CgroupFromPath(path string) (id uint64, level uint32, err error) {
	root, err := Cgroup2Root()
	if err != nil {
		return 0, 0, err
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	path = filepath.Clean(path)
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return 0, 0, fmt.Errorf("cgroup %s: %w", path, err)
	}
	if fs.Type != cgroup2Magic {
		return 0, 0, fmt.Errorf("cgroup %s: not on the cgroup v2 hierarchy (mounted at %s)", path, root)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, fmt.Errorf("stat cgroup %s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return 0, 0, fmt.Errorf("cgroup %s: not a directory", path)
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return 0, 0, fmt.Errorf("cgroup %s: not under %s", path, root)
	}
	if rel != "." {
		level = uint32(len(strings.Split(rel, string(os.PathSeparator))))
	}
	return st.Ino, level, nil
}
