package agent

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// DefaultNice is `triage agent`'s niceness: its own. At -10 a decide call
// preempts the executor's workers on a busy node (p99 inside the agent 79
// against 122-135 us with every task a remote call), but with local
// decisions the table's refresh preempts them too, which cost the node's
// work 1.1-1.4 points of SLA attainment (docs/footprint.md, "The
// scheduler's share of the tail"). An operator whose upstreams call for
// every task sets it.
const DefaultNice = 0

// applyNice sets the scheduling niceness of every thread of this process
// to nice. Linux keeps a niceness per thread and a new thread inherits its
// creator's, so setting all the threads there are once covers the ones Go
// starts later. A negative niceness needs CAP_SYS_NICE; without it the
// first thread's error is returned and the rest are left as they were.
func applyNice(nice int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("listing this process's threads: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil && err != unix.ESRCH {
			return fmt.Errorf("setting thread %d's niceness to %d: %w", tid, nice, err)
		}
	}
	return nil
}
