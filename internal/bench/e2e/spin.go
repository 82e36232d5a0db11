package e2e

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// burn does real CPU work on the calling OS thread for the task's cost d,
// or until stop is set; it returns false when stopped early.
//
// With cpuTime false (the default of the bench) d is wall time: the
// thread spins until d has passed, so a task's service time is its cost
// whatever else the machine runs, and the run's queueing is the
// scenario's (4 workers serve like 4 workers even on 2 cores). With
// cpuTime true d is the thread's own CPU time: on a machine with fewer
// free cores than workers, tasks then take longer, as on an oversubscribed
// node.
//
// The work is a xorshift loop whose result is kept in a package variable,
// so the compiler cannot drop it; the clock is read every chunk (about
// 2 µs of work), which bounds the overshoot.
func burn(d time.Duration, cpuTime bool, stop *atomic.Bool) bool {
	clock := wallClock
	if cpuTime {
		clock = threadCPU
	}
	start := clock()
	x := sink.Load() | 1
	for {
		for i := 0; i < spinChunk; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		if clock()-start >= d {
			sink.Store(x)
			return true
		}
		if stop.Load() {
			sink.Store(x)
			return false
		}
	}
}

// spinChunk is the xorshift iterations between clock reads; at about 1 ns
// each it is some 2 µs of work.
const spinChunk = 2_000

func wallClock() time.Duration { return time.Duration(time.Now().UnixNano()) }

var sink atomic.Uint64

// threadCPU is the CPU time the calling thread has used.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano()) // cannot happen on Linux; wall time keeps burn finite
	}
	return time.Duration(ts.Nano())
}
