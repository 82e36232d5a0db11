// Package cgroup2 reads where the cgroup v2 hierarchy is mounted, from
// /proc/self/mountinfo. bpf uses it to find the hierarchy its cgroup ids
// live on, and internal/faulttest to find one to make test cgroups in. It
// is a package of its own under bpf because bpf may import nothing of the
// module but its own subtree, and bpf's tests import internal/faulttest,
// so neither of those two can import the other.
package cgroup2

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Mount is one cgroup v2 mount of this process's mount namespace.
type Mount struct {
	// Root is the directory of the hierarchy the mount shows: "/" for the
	// whole hierarchy, a cgroup's path for a bind mount of that cgroup
	// alone (a container's view).
	Root string
	// Point is where it is mounted: /sys/fs/cgroup on unified systems,
	// /sys/fs/cgroup/unified on hybrid ones.
	Point string
}

// Mounts lists the cgroup v2 mounts of /proc/self/mountinfo in its order.
// A line the scanner cannot read ends the list there, like the end of the
// file: the mounts before it are still the mounts.
func Mounts() ([]Mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mountinfo: %w", err)
	}
	defer f.Close()
	return parseMountinfo(f), nil
}

// parseMountinfo is the cgroup v2 mounts of a mountinfo table, in its
// order.
func parseMountinfo(r io.Reader) []Mount {
	var mounts []Mount
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// "36 35 0:30 / /sys/fs/cgroup/unified rw,... - cgroup2 cgroup2 rw"
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(right, "cgroup2 ") {
			continue
		}
		if fields := strings.Fields(left); len(fields) >= 5 {
			mounts = append(mounts, Mount{Root: fields[3], Point: fields[4]})
		}
	}
	return mounts
}
