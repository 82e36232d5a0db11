// Package proc starts and watches processes for benchmarks, tests and the
// calibration: CPU spinners (threads of this process), controlled loads
// (spinners and fsync'ing writers as processes that never outlive their
// starter: Load), a process's CPU time and memory, and a loopback TCP
// listener that closes what it accepts (ListenClosingEach). It depends on the
// standard library and x/sys only, so that tests of bpf, agent/signals and
// agent/profiling can use it without linking ONNX Runtime through policy.
package proc

import (
	"runtime"
	"sync"
	"time"
)

// SpinThreads keeps n OS threads of this process runnable for d and
// returns when they stop: more runnable threads than CPUs is what makes
// run-queue latency rise.
func SpinThreads(n int, d time.Duration) {
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			// Unlock before returning: a goroutine that exits locked takes
			// its thread down, and the thread's schedstat with it, which a
			// parent process may still have to read.
			defer runtime.UnlockOSThread()
			x := uint64(1)
			for time.Now().Before(deadline) {
				for j := 0; j < 10000; j++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		}()
	}
	wg.Wait()
}
