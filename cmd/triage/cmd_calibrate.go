package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/triage-agent/triage/internal/bench/calibrate"
	"github.com/triage-agent/triage/train"
)

func init() {
	register("calibrate", "measure how this machine's kernel signals and task slowdowns respond to CPU and disk contention", runCalibrate)
}

func runCalibrate(args []string) error {
	fs := newFlagSet("calibrate", "run controlled CPU, bursty and disk loads, read the agent's signal sources and the slowdown of real work under each (and of short jobs that wake, and fsync'd writes, beside spinners; and the run queue beside spinners and writers), and write a calibration file for the simulator (needs the machine to itself; about 6 minutes)")
	out := fs.String("out", "", "write the calibration here (default: standard output)")
	dir := fs.String("dir", os.TempDir(), "directory for the fsync'd writers: on the disk whose latency matters")
	quick := fs.Bool("quick", false, "three levels of each kind and short windows (a smoke test, not a calibration)")
	noBPF := fs.Bool("no-ebpf", false, "read every signal from procfs")
	schedulerOf := fs.String("scheduler-of", "", "measure only the scheduler's levels (bursty threads and how they read the run queue; waking jobs beside spinners and the credit they get; fsync'd writes beside spinners; the run queue beside spinners and writers) and write this calibration file (\"default\": the embedded one) with them in place of its own; about 4 minutes")
	compare := fs.String("compare", "", "measure nothing: print, for this calibration file (\"default\": the embedded one), the measured signals beside what the simulator synthesises from them, as a markdown table")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	if *compare != "" {
		cal := train.DefaultCalibration()
		if *compare != "default" {
			var err error
			if cal, err = train.LoadCalibration(*compare); err != nil {
				return err
			}
		}
		writeCalibrationComparison(os.Stdout, cal)
		return nil
	}
	cfg := calibrate.Config{Dir: *dir, NoBPF: *noBPF, Progress: func(s string) { fmt.Fprintln(os.Stderr, "measuring", s) }}
	if *quick {
		cfg.CPULevels, cfg.IOLevels, cfg.Windows = []float64{0.5, 1, 2}, []int{0, 1, 2}, 2
		cfg.BurstyLevels = calibrate.DefaultBurstyLevels[len(calibrate.DefaultBurstyLevels)-1:]
		cfg.WakeLevels = []calibrate.WakeConfig{{SpinnersPerCPU: 1, JobsMs: []float64{2}}}
		cfg.IOCPULevels = []float64{0, 1}
		cfg.RunqIOLevels = []calibrate.RunqIOConfig{{SpinnersPerCPU: 1}, {SpinnersPerCPU: 1, Writers: 1}}
		cfg.Settle = 1500e6
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cal *train.Calibration
	var err error
	if *schedulerOf != "" {
		base := train.DefaultCalibration()
		if *schedulerOf != "default" {
			if base, err = train.LoadCalibration(*schedulerOf); err != nil {
				return err
			}
		}
		cal, err = calibrate.MeasureScheduler(ctx, cfg, base)
	} else {
		cal, err = calibrate.Run(ctx, cfg)
	}
	if err != nil {
		return err
	}
	writeCalibrationTable(os.Stderr, cal)
	b, err := json.MarshalIndent(cal, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if *out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(*out, b, 0o644)
}

// writeCalibrationTable prints what was measured, one row per level.
func writeCalibrationTable(w *os.File, cal *train.Calibration) {
	fmt.Fprintf(w, "\n%d CPUs, kernel %s, sources %v\n", cal.Machine.CPUs, cal.Machine.Kernel, cal.Machine.Sources)
	fmt.Fprintf(w, "idle: run-queue p50 %.1f µs, p99 %.1f µs; block-I/O p99 %.0f µs; CPU %.2f\n",
		cal.Idle.RunqP50Us, cal.Idle.RunqP99Us, cal.Idle.BlkioP99Us, cal.Idle.CPUUtil)
	fmt.Fprintln(w, "threads/CPU  runq p50 µs  runq p99 µs  CPU   slowdown")
	for _, l := range cal.CPU {
		fmt.Fprintf(w, "%11.2f  %11.1f  %11.1f  %.2f  %8.2f\n", l.ThreadsPerCPU, l.RunqP50Us, l.RunqP99Us, l.CPUUtil, l.Slowdown)
	}
	if len(cal.Bursty) > 0 {
		fmt.Fprintln(w, "bursty threads  duty  burst ms  oversubscribed share, load  runq p99 µs  CPU")
		for _, l := range cal.Bursty {
			fmt.Fprintf(w, "%14d  %.2f  %8.1f  %20.3f, %.2f  %11.1f  %.2f\n", l.Threads, l.Duty, l.BurstMs, l.OversubscribedShare, l.OversubscribedLoad, l.RunqP99Us, l.CPUUtil)
		}
		fmt.Fprintf(w, "oversubscribed run-queue exponent: %.3f\n", cal.OversubscribedExponent())
	}
	if len(cal.Wake) > 0 {
		fmt.Fprintln(w, "spinners/CPU  waking job ms  slowdown  a long job's")
		for _, l := range cal.Wake {
			fmt.Fprintf(w, "%12.2f  %12.1f  %8.2f  %12.2f\n", l.SpinnersPerCPU, l.JobMs, l.Slowdown, l.ShareSlowdown)
		}
		fmt.Fprintf(w, "wake credit: %.2f ms\n", cal.WakeCredit())
	}
	fmt.Fprintln(w, "writers  blkio p99 µs  write+fsync ms  slowdown  CPU")
	for _, l := range cal.IO {
		fmt.Fprintf(w, "%7d  %11.0f  %14.2f  %8.2f  %.2f\n", l.Writers, l.BlkioP99Us, l.WriteMs, l.Slowdown, l.CPUUtil)
	}
	if len(cal.IOCPU) > 0 {
		fmt.Fprintln(w, "spinners/CPU  write+fsync ms  slowdown")
		for _, l := range cal.IOCPU {
			fmt.Fprintf(w, "%12.2f  %14.3f  %8.2f\n", l.SpinnersPerCPU, l.WriteMs, l.Slowdown)
		}
	}
	if len(cal.RunqIO) > 0 {
		fmt.Fprintln(w, "spinners/CPU  writers  runq p50 µs  runq p99 µs")
		for _, l := range cal.RunqIO {
			fmt.Fprintf(w, "%12.2f  %7d  %11.1f  %11.1f\n", l.SpinnersPerCPU, l.Writers, l.RunqP50Us, l.RunqP99Us)
		}
	}
}

// writeCalibrationComparison prints, per load level, the measured median
// (± its log-normal sigma across windows) beside the simulator's median
// and p10–p90 over 400 windows at the same load.
func writeCalibrationComparison(w io.Writer, cal *train.Calibration) {
	const samples, seed = 400, 1
	sim := func(s train.Spread, unit float64) string {
		return fmt.Sprintf("%.0f [%.0f–%.0f]", s.P50/unit, s.P10/unit, s.P90/unit)
	}
	fmt.Fprintf(w, "CPU contention (%d CPUs, kernel %s, measured %s)\n\n", cal.Machine.CPUs, cal.Machine.Kernel, cal.Machine.MeasuredAt)
	fmt.Fprintln(w, "| threads/CPU | runq p50 µs measured | simulated | runq p99 µs measured | simulated | slowdown measured | simulated |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, l := range cal.CPU {
		s := train.SimulateCPULevel(cal, l.ThreadsPerCPU, samples, seed)
		fmt.Fprintf(w, "| %.2f | %.1f (σ %.2f) | %s | %.0f (σ %.2f) | %s | %.2f | %.2f |\n", l.ThreadsPerCPU,
			l.RunqP50Us, l.RunqP50Sigma, simP50(s.RunqP50Us), l.RunqP99Us, l.RunqP99Sigma, sim(s.RunqP99Us, 1), l.Slowdown, s.Slowdown)
	}
	writeBurstyComparison(w, cal)
	fmt.Fprintln(w, "\nDisk contention (fsync'd writers besides the measured one)")
	fmt.Fprintln(w, "\n| writers | block-I/O p99 µs measured | simulated | slowdown measured | simulated | CPU measured | writers' CPU simulated, threads |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, l := range cal.IO {
		s := train.SimulateIOLevel(cal, l.Writers, samples, seed)
		fmt.Fprintf(w, "| %d | %.0f (σ %.2f) | %s | %.2f | %.2f | %.2f | %.2f |\n", l.Writers, l.BlkioP99Us, l.BlkioP99Sigma, sim(s.BlkioP99Us, 1),
			l.Slowdown, s.Slowdown, l.CPUUtil, cal.WriterThreads(float64(l.Writers+1)))
	}
}

func simP50(s train.Spread) string { return fmt.Sprintf("%.1f [%.1f–%.1f]", s.P50, s.P10, s.P90) }

// writeBurstyComparison prints each bursty level's measured run-queue p99
// beside what the simulator reads for a window oversubscribed as that
// level is (train.Calibration.RunqP99Oversubscribed, before its noise)
// and beside the steady level at the same mean load, which is what the
// simulator read before it counted the oversubscribed moments.
func writeBurstyComparison(w io.Writer, cal *train.Calibration) {
	if len(cal.Bursty) == 0 {
		fmt.Fprintln(w, "\nBursty threads: not measured in this calibration (the simulator takes the default exponent)")
		return
	}
	fmt.Fprintf(w, "\nBursty threads (exponent %.3f fitted to these rows)\n\n", cal.OversubscribedExponent())
	fmt.Fprintln(w, "| threads | duty | mean threads/CPU | oversubscribed share | runq p99 µs measured | simulated | steady level at the mean |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, l := range cal.Bursty {
		mean := float64(l.Threads) * l.Duty / float64(cal.Machine.CPUs)
		p99, _ := cal.RunqP99Oversubscribed(l.OversubscribedShare, l.OversubscribedLoad)
		fmt.Fprintf(w, "| %d | %.2f | %.2f | %.3f | %.0f (σ %.2f) | %.0f | %.0f |\n", l.Threads, l.Duty, mean, l.OversubscribedShare,
			l.RunqP99Us, l.RunqP99Sigma, max(p99, cal.CPUAt(mean).RunqP99Us), cal.CPUAt(mean).RunqP99Us)
	}
}
