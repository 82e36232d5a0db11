package signals

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// cgroupID is the cgroup v2 id of a cgroup directory: its inode number.
func cgroupID(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", path, err)
	}
	return st.Ino, nil
}

// watchCgroupPath has a probe's watch take the cgroup directory at path by
// its id. A refusal because the probe's map is full (errors.Is full) counts
// in overflow, which the snapshot reports: the agent keeps serving with the
// cgroups it holds. purpose ("" or " for syscalls") ends the error's
// "watching cgroup PATH" prefix.
func watchCgroupPath(path, purpose string, watch func(id uint64) error, full error, overflow *int) (uint64, error) {
	id, err := cgroupID(path)
	if err != nil {
		return 0, err
	}
	if err := watch(id); err != nil {
		if errors.Is(err, full) {
			*overflow++
		}
		return 0, fmt.Errorf("watching cgroup %s%s: %w", path, purpose, err)
	}
	return id, nil
}
