package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/triage-agent/triage/internal/bench/profiler"
)

func init() { registerBench("profiler", runBenchProfiler) }

// runBenchProfiler measures what the flame-graph profiler costs the agent
// while every CPU is busy (internal/bench/profiler), for each frequency.
func runBenchProfiler(args []string) error {
	fs, asJSON := newBenchFlagSet("profiler", "CPU% and RSS of the eBPF profiler while every CPU is busy")
	duration := fs.Duration("duration", 30*time.Second, "how long to profile at each frequency")
	window := fs.Duration("window", 10*time.Second, "window length (drain + symbolise + write pprof/folded/SVG)")
	hzList := fs.String("hz", "19,99", "comma-separated sampling frequencies")
	unwindList := fs.String("unwind", "fp,dwarf", "comma-separated unwind modes, run side by side at each frequency: fp (kernel frame-pointer walk), dwarf (stack copies unwound by .eh_frame)")
	offCPU := fs.Bool("off-cpu", false, "also run the off-CPU profiler")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the bench (the agent side) to `file`")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	o := profiler.Options{OffCPU: *offCPU, Duration: *duration, Window: *window}
	for _, u := range strings.Split(*unwindList, ",") {
		o.Unwind = append(o.Unwind, strings.TrimSpace(u))
	}
	for _, f := range strings.Split(*hzList, ",") {
		hz, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || hz <= 0 {
			return fmt.Errorf("bad --hz entry %q", f)
		}
		o.Hz = append(o.Hz, hz)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := profiler.Run(o)
	if err != nil {
		return err
	}
	return printTableAndJSON(res, *asJSON)
}
