// Package tracefs mounts tracefs where none is, so that classic
// tracepoints can be found: cilium/ebpf (bpf's loaders) and bpftrace (the
// benches' peer, internal/bench/peer) both look tracepoint ids up under a
// mounted tracefs, and a freshly booted VM or a minimal container may have
// none. It is a package of its own under bpf because bpf may import
// nothing of the module but its own subtree, and bpf's tests import the
// peer, so neither of those two can import the other (as bpf/cgroup2).
package tracefs

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

var once struct {
	sync.Mutex
	done bool
}

// Mount mounts tracefs at /sys/kernel/tracing when neither the canonical
// nor the debugfs location has an events directory. Once it has succeeded
// in a process it does nothing more.
func Mount() error {
	once.Lock()
	defer once.Unlock()
	if once.done {
		return nil
	}
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(dir + "/events"); err == nil {
			once.done = true
			return nil
		}
	}
	if err := unix.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, ""); err != nil && err != unix.EBUSY {
		return fmt.Errorf("mounting tracefs at /sys/kernel/tracing: %w", err)
	}
	once.done = true
	return nil
}
