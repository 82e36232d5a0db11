package agent

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultNice is `triage agent`'s niceness: its own. At -10 a decide call
// preempts the executor's workers on a busy node (p99 inside the agent 79
// against 122-135 us with every task a remote call), but with local
// decisions the table's refresh preempts them too, which cost the node's
// work 1.1-1.4 points of SLA attainment (docs/footprint-history.md, "The
// scheduler's share of the tail"). An operator whose upstreams call for
// every task sets it.
const DefaultNice = 0

// applyNice sets the scheduling niceness of every thread of this process
// to nice. Linux keeps a niceness per thread and a new thread inherits its
// creator's, so setting all the threads there are once covers the ones Go
// starts later. A negative niceness needs CAP_SYS_NICE; without it the
// first thread's error is returned and the rest are left as they were.
func applyNice(nice int) error {
	return eachThread(func(tid int) error {
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("setting thread %d's niceness to %d: %w", tid, nice, err)
		}
		return nil
	})
}

// eachThread calls set for every thread of this process and returns the
// first error, skipping threads that ended since the listing. A thread
// that a thread not yet set starts during the walk copies the old value
// and may be missing from the listing, so the walk lists again until a
// listing holds no thread it has not set (threads started after that
// copy a set one). The Go runtime starts threads in bursts, so a few
// listings suffice; eachThreadListings bounds them.
func eachThread(set func(tid int) error) error {
	done := make(map[int]bool)
	for range eachThreadListings {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			fresh, done[tid] = true, true
			if err := set(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
		if !fresh {
			return nil
		}
	}
	return nil
}

// eachThreadListings bounds eachThread's listings of the threads.
const eachThreadListings = 16

// DefaultSchedSlice is `triage agent`'s scheduling slice. Under `bench
// e2e` (workers on every CPU) 300 us raised SLA attainment 1 to 2 points
// with every task a remote call and 0.3 to 0.8 with local decisions, for
// about a point more of a core in the remote case; 100 us served the same
// and cut the agent's own calls more often (docs/footprint-history.md, "A
// shorter slice for the agent's threads").
const DefaultSchedSlice = 300 * time.Microsecond

// Custom slices are EEVDF's (Linux 6.12 and later): the kernel takes the
// slice a thread asks for in sched_attr.sched_runtime, clamped to this
// range, without any privilege.
const (
	MinSchedSlice = 100 * time.Microsecond
	MaxSchedSlice = 100 * time.Millisecond
)

// ErrNoSchedSlice means the kernel keeps its own slice for the agent's
// threads: it is older than EEVDF's custom slices, and ignores the request.
var ErrNoSchedSlice = errors.New("this kernel has no custom scheduling slices (EEVDF, Linux 6.12 and later)")

// applySchedSlice asks the scheduler for a slice of d for every thread of
// this process (0: the kernel's own slice again). A thread with a shorter
// slice than the one running gets its virtual deadline sooner, so when a
// decide call wakes it, it preempts a worker that has run past its own
// (PREEMPT_SHORT) instead of waiting for that worker's slice to end;
// unlike a negative niceness it buys no larger share of the CPU, and needs
// no capability. New threads inherit the slice of the thread that creates
// them, as they do the niceness. Each thread keeps its policy and
// niceness (sched_setattr sets every field, so they are read first).
func applySchedSlice(d time.Duration) error {
	err := eachThread(func(tid int) error {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			return fmt.Errorf("reading thread %d's scheduling attributes: %w", tid, err)
		}
		if !fairPolicy(attr.Policy) {
			return nil // a real-time thread has no slice to ask for
		}
		attr.Size = unix.SizeofSchedAttr
		attr.Runtime = uint64(d)
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
			return fmt.Errorf("setting thread %d's slice to %v: %w", tid, d, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if d == 0 {
		return nil // the kernel's own slice again, whatever it is
	}
	// An older kernel takes the call and ignores the field for a fair
	// thread: read it back to tell.
	got, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return fmt.Errorf("reading the slice back: %w", err)
	}
	if fairPolicy(got.Policy) && got.Runtime != uint64(d) {
		return ErrNoSchedSlice
	}
	return nil
}

// fairPolicy says whether a scheduling policy is the fair class's, the
// one whose threads have a slice.
func fairPolicy(p uint32) bool {
	return p == unix.SCHED_NORMAL || p == unix.SCHED_BATCH || p == unix.SCHED_IDLE
}
