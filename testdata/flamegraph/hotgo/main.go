// Command hotgo is the profiling tests' target: it spends its time in known
// functions so a profile of it can be checked. Modes:
//
//	cpu      main.runCPU -> main.level1 -> main.level2 -> main.hotLoop (nearly all samples)
//	mix      main.workA..workE, weighted 40/25/15/12/8 (a top five to compare with perf)
//	syscall  main.readZero reads /dev/zero in 64 KiB chunks (time in the kernel)
//	sleep    main.sleepyWait sleeps 100 ms at a time with a raw nanosleep
//
// It prints "ready" once running, then runs for -duration.
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"
)

var sink uint64

func main() {
	mode := flag.String("mode", "cpu", "cpu | mix | syscall | sleep")
	duration := flag.Duration("duration", 3*time.Second, "how long to run")
	flag.Parse()
	fmt.Println("ready")
	deadline := time.Now().Add(*duration)
	switch *mode {
	case "cpu":
		runCPU(deadline)
	case "mix":
		runMix(deadline)
	case "syscall":
		runSyscall(deadline)
	case "sleep":
		runSleep(deadline)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", *mode)
		os.Exit(2)
	}
}

//go:noinline
func runCPU(deadline time.Time) {
	for time.Now().Before(deadline) {
		level1()
	}
}

//go:noinline
func level1() { level2() }

//go:noinline
func level2() { hotLoop(2_000_000) }

// hotLoop is where the time goes. It ends with a call so that it is not a
// frameless leaf: the kernel unwinds user stacks by frame pointer, and a
// leaf without a frame hides its caller (main.level2) from every
// frame-pointer profiler, perf included.
//
//go:noinline
func hotLoop(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	store(x)
}

//go:noinline
func store(x uint64) { sink = x }

//go:noinline
func runMix(deadline time.Time) {
	for time.Now().Before(deadline) {
		workA(400_000)
		workB(250_000)
		workC(150_000)
		workD(120_000)
		workE(80_000)
	}
}

//go:noinline
func workA(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func workB(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func workC(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func workD(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func workE(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func runSyscall(deadline time.Time) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buf := make([]byte, 64<<10)
	for time.Now().Before(deadline) {
		readZero(int(f.Fd()), buf)
	}
}

//go:noinline
func readZero(fd int, buf []byte) {
	for i := 0; i < 64; i++ {
		if _, err := syscall.Read(fd, buf); err != nil {
			os.Exit(1)
		}
	}
}

//go:noinline
func runSleep(deadline time.Time) {
	for time.Now().Before(deadline) {
		sleepyWait()
	}
}

// sleepyWait blocks its thread in the kernel: syscall.Nanosleep is a plain
// syscall, so the thread's user stack at the switch still shows this
// function (time.Sleep would park the goroutine and show the scheduler).
//
//go:noinline
func sleepyWait() {
	ts := syscall.NsecToTimespec(int64(100 * time.Millisecond))
	_ = syscall.Nanosleep(&ts, nil)
}
