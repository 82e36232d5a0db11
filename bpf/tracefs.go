package bpf

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

var tracefsOnce struct {
	sync.Mutex
	done bool
}

// mountTracefs makes classic tracepoints usable: cilium/ebpf finds
// tracepoint ids under a mounted tracefs, and a minimal container or VM may
// have none. It mounts tracefs at /sys/kernel/tracing when neither the
// canonical nor the debugfs location has an events directory.
func mountTracefs() error {
	tracefsOnce.Lock()
	defer tracefsOnce.Unlock()
	if tracefsOnce.done {
		return nil
	}
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(dir + "/events"); err == nil {
			tracefsOnce.done = true
			return nil
		}
	}
	if err := unix.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, ""); err != nil && err != unix.EBUSY {
		return fmt.Errorf("mounting tracefs at /sys/kernel/tracing: %w", err)
	}
	tracefsOnce.done = true
	return nil
}
