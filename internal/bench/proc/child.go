package proc

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// Environment of a load child.
const (
	envChild = "TRIAGE_LOAD_CHILD"    // "spin" or "write"
	envDuty  = "TRIAGE_LOAD_DUTY"     // spin: fraction of each period spent spinning
	envDir   = "TRIAGE_LOAD_DIR"      // write: directory of the file
	envBytes = "TRIAGE_LOAD_BYTES"    // write: bytes per fsync'd write
	envBurst = "TRIAGE_LOAD_BURST_MS" // spin: mean burst (ms) of a bursty spinner; unset: periodic
)

// dutyPeriod is the period of a spinner that is runnable only part of the
// time: short against the run-queue window, long against a timeslice.
const dutyPeriod = 10 * time.Millisecond

// writeSpan bounds a writer's file: it rewrites the same span, so a long
// run does not fill the disk; every write is still fsync'd to the device.
const writeSpan = 16 << 20

func init() {
	kind := os.Getenv(envChild)
	if kind == "" {
		return
	}
	runtime.GOMAXPROCS(1)
	var err error
	switch kind {
	case "spin":
		err = spin()
	case "write":
		err = write()
	default:
		err = fmt.Errorf("unknown %s=%q", envChild, kind)
	}
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "proc load child:", err)
	os.Exit(2)
}

// orphaned reports whether the starter is gone (the child was reparented).
func orphaned(ppid int) bool { return os.Getppid() != ppid }

func spin() error {
	duty, err := strconv.ParseFloat(os.Getenv(envDuty), 64)
	if err != nil || !(duty > 0 && duty <= 1) {
		return fmt.Errorf("%s must be in (0, 1]: %q", envDuty, os.Getenv(envDuty))
	}
	ppid := os.Getppid()
	if b := os.Getenv(envBurst); b != "" {
		burst, err := strconv.ParseFloat(b, 64)
		if err != nil || !(burst > 0 && burst <= maxBurstMs) {
			return fmt.Errorf("%s must be in (0, %v]: %q", envBurst, maxBurstMs, b)
		}
		return spinBursty(duty, burst, ppid)
	}
	on := time.Duration(float64(dutyPeriod) * duty)
	x := uint64(1)
	for {
		start := time.Now()
		x = spinFor(start, on, 4096, x)
		if orphaned(ppid) {
			os.Exit(0)
		}
		if duty < 1 {
			time.Sleep(dutyPeriod - time.Since(start))
		}
		if x == 0 { // keeps the loop from being optimised away
			fmt.Fprint(os.Stderr, "")
		}
	}
}

func write() error {
	n, err := strconv.Atoi(os.Getenv(envBytes))
	if err != nil || n <= 0 || n > 64<<20 {
		return fmt.Errorf("%s must be in (0, 64 MiB]: %q", envBytes, os.Getenv(envBytes))
	}
	ppid := os.Getppid()
	f, err := os.CreateTemp(os.Getenv(envDir), "triage-load-writer-*.dat")
	if err != nil {
		return fmt.Errorf("creating the writer's file: %w", err)
	}
	name := f.Name()
	defer os.Remove(name)
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i*7 + 1) // not zeros: no filesystem can elide them
	}
	var off int64
	for !orphaned(ppid) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Base(name), err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", filepath.Base(name), err)
		}
		off += int64(n)
		if off+int64(n) > writeSpan {
			off = 0
		}
	}
	return nil
}

// spinFor does CPU work from start until on has passed, reading the clock
// every chunk steps, and returns the work's state x, which the caller
// keeps so that the loop cannot be optimised away.
func spinFor(start time.Time, on time.Duration, chunk int, x uint64) uint64 {
	for time.Since(start) < on {
		for i := 0; i < chunk; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// maxBurstMs bounds a bursty spinner's mean burst: a second.
const maxBurstMs = 1000

// spinBursty spins for exponential bursts of wall time (mean burstMs) and
// sleeps for exponential gaps (mean burstMs × (1 − duty) / duty), so it
// is runnable duty of the time, at moments independent of every other
// bursty spinner's: threads that come and go. Each process draws from a
// stream seeded by its pid and its start time.
func spinBursty(duty, burstMs float64, ppid int) error {
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	mean := func(ms float64) time.Duration { return time.Duration(r.ExpFloat64() * ms * float64(time.Millisecond)) }
	gapMs := burstMs * (1 - duty) / duty
	x := uint64(1)
	for !orphaned(ppid) {
		x = spinFor(time.Now(), mean(burstMs), 1024, x)
		if gapMs > 0 {
			time.Sleep(mean(gapMs))
		}
		if x == 0 { // keeps the loop from being optimised away
			fmt.Fprint(os.Stderr, "")
		}
	}
	return nil
}
