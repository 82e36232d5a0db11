package calibrate

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// cpuProbe measures how much a fixed amount of CPU work stretches: it runs
// jobs of about jobCPU of CPU time on a thread of its own at nice and
// reports each job's wall time over its CPU time. With duty < 1 it sleeps
// between jobs so that it is runnable that fraction of the time.
type cpuProbe struct {
	nice   int
	duty   float64
	jobCPU time.Duration
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// run measures jobs until stop closes and returns each job's slowdown.
func (p cpuProbe) run(stop <-chan struct{}) ([]float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), p.nice); err != nil {
		return nil, fmt.Errorf("calibrate: nice %d for the CPU probe: %w", p.nice, err)
	}
	var out []float64
	x := uint64(1)
	for {
		select {
		case <-stop:
			if x == 0 {
				fmt.Fprint(os.Stderr, "") // keeps the work from being optimised away
			}
			return out, nil
		default:
		}
		w0, c0 := time.Now(), threadCPU()
		for threadCPU()-c0 < p.jobCPU {
			for i := 0; i < 2048; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}
		wall, cpu := time.Since(w0), threadCPU()-c0
		out = append(out, float64(wall)/float64(cpu))
		if p.duty < 1 {
			time.Sleep(time.Duration(float64(wall) * (1/p.duty - 1)))
		}
	}
}

// ioProbe measures the time of one write and fsync of size bytes in dir,
// repeatedly, until stop closes.
type ioProbe struct {
	dir  string
	size int
	// nice, when not 0, is the writing thread's nice: the workers' own,
	// where the probe stands for a worker's I/O beside CPU work.
	nice int
}

func (p ioProbe) run(stop <-chan struct{}) ([]float64, error) {
	if p.nice != 0 {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), p.nice); err != nil {
			return nil, fmt.Errorf("calibrate: nice %d for the I/O probe: %w", p.nice, err)
		}
	}
	f, err := os.CreateTemp(p.dir, "triage-calibrate-*.dat")
	if err != nil {
		return nil, fmt.Errorf("calibrate: the I/O probe's file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, p.size)
	for i := range buf {
		buf[i] = byte(i*13 + 5)
	}
	var out []float64
	var off int64
	for {
		select {
		case <-stop:
			return out, nil
		default:
		}
		t0 := time.Now()
		if _, err := f.WriteAt(buf, off); err != nil {
			return out, fmt.Errorf("calibrate: I/O probe write: %w", err)
		}
		if err := f.Sync(); err != nil {
			return out, fmt.Errorf("calibrate: I/O probe fsync: %w", err)
		}
		out = append(out, float64(time.Since(t0))/float64(time.Millisecond))
		off = (off + int64(p.size)) % (16 << 20)
	}
}
