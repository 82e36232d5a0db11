package peer

import (
	"fmt"
	"os"
	"syscall"
)

// mountTracefs makes the classic tracepoints bpftrace attaches to
// (sched:sched_switch and the wakeups) findable: bpftrace looks them up
// under a mounted tracefs, and a freshly booted VM or a minimal container
// may have none, where bpftrace exits with "tracepoint not found" before it
// attaches. It mounts tracefs at /sys/kernel/tracing when neither the
// canonical nor the debugfs location has an events directory, as the
// agent's loaders do (bpf.mountTracefs; peer cannot import bpf, whose
// tests use it).
func mountTracefs() error {
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(dir + "/events"); err == nil {
			return nil
		}
	}
	if err := syscall.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, ""); err != nil && err != syscall.EBUSY {
		return fmt.Errorf("mounting tracefs at /sys/kernel/tracing: %w", err)
	}
	return nil
}
