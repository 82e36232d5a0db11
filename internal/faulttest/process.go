package faulttest

import (
	"fmt"
	"os"
)

// OpenFDs counts the open file descriptors of process pid (0: this one)
// from /proc/PID/fd.
func OpenFDs(pid int) (int, error) {
	dir := "/proc/self/fd"
	if pid != 0 {
		dir = fmt.Sprintf("/proc/%d/fd", pid)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("counting open descriptors: %w", err)
	}
	// Reading the directory opened one descriptor of its own, which is
	// closed again but listed when it is this process's.
	n := len(ents)
	if pid == 0 {
		n--
	}
	return n, nil
}
