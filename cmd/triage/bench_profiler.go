package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/triage-agent/triage/agent/profiling"
	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/flamegraph"
)

func init() { registerBench("profiler", runBenchProfiler) }

type profilerBenchRow struct {
	Hz          int     `json:"hz"`
	OffCPU      bool    `json:"off_cpu"`
	Seconds     float64 `json:"seconds"`
	AgentCPUPct float64 `json:"agent_cpu_pct"` // user+sys of this process / wall / CPUs
	BPFCPUPct   float64 `json:"bpf_cpu_pct"`   // in-kernel program run time / wall / CPUs
	BaseRSSMiB  float64 `json:"base_rss_mib"`  // before the profiler was started
	RSSMiB      float64 `json:"rss_mib"`       // at the end of the run
	PeakRSSMiB  float64 `json:"peak_rss_mib"`  // VmHWM
	Samples     int64   `json:"samples"`
	Windows     int     `json:"windows"`
	StoreBytes  int64   `json:"store_bytes"`
}

// runBenchProfiler measures what the flame-graph profiler costs the agent
// while every CPU is busy: it starts one bounded busy loop per CPU (child
// processes, so their CPU is not the agent's), runs the recorder with a
// window store as the agent does, and reports this process's CPU% and RSS
// and the in-kernel BPF time, for each frequency.
func runBenchProfiler(args []string) error {
	fs := newFlagSet("bench profiler", "CPU% and RSS of the eBPF profiler while every CPU is busy")
	duration := fs.Duration("duration", 30*time.Second, "how long to profile at each frequency")
	window := fs.Duration("window", 10*time.Second, "window length (drain + symbolise + write pprof/folded/SVG)")
	hzList := fs.String("hz", "19,99", "comma-separated sampling frequencies")
	offCPU := fs.Bool("off-cpu", false, "also run the off-CPU profiler")
	asJSON := fs.Bool("json", false, "print one JSON object as the last line")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the bench (the agent side) to `file`")
	addConfigFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	if *duration <= 0 || *duration > 10*time.Minute || *window <= 0 {
		return fmt.Errorf("--duration must be in (0, 10m] and --window positive")
	}
	var hzs []int
	for _, f := range strings.Split(*hzList, ",") {
		hz, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || hz <= 0 {
			return fmt.Errorf("bad --hz entry %q", f)
		}
		hzs = append(hzs, hz)
	}
	stats, err := bpf.EnableRunStats()
	if err != nil {
		return err
	}
	defer stats.Close()

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
	ncpu := runtime.NumCPU()
	var rows []profilerBenchRow
	for _, hz := range hzs {
		var row profilerBenchRow
		var err error
		if len(hzs) == 1 {
			row, err = benchProfilerOnce(hz, *offCPU, *duration, *window, ncpu)
		} else {
			// Each frequency in a fresh process, so that RSS is not
			// inherited from the previous run.
			row, err = benchProfilerChild(hz, *offCPU, *duration, *window)
		}
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "machine\t%s, %d CPUs, all busy\n", profilerBenchMachine(), ncpu)
	fmt.Fprintln(tw, "hz\toff-cpu\tagent CPU%\tBPF CPU%\tRSS before MiB\tRSS MiB\tpeak RSS MiB\tsamples\twindows\tstore bytes")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%v\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\n", r.Hz, r.OffCPU, r.AgentCPUPct, r.BPFCPUPct, r.BaseRSSMiB, r.RSSMiB, r.PeakRSSMiB, r.Samples, r.Windows, r.StoreBytes)
	}
	tw.Flush()
	if *asJSON {
		b, _ := json.Marshal(map[string]any{"bench": "profiler", "machine": profilerBenchMachine(), "cpus": ncpu, "results": rows})
		fmt.Println(string(b))
	}
	return nil
}

func benchProfilerChild(hz int, offCPU bool, duration, window time.Duration) (profilerBenchRow, error) {
	self, err := os.Executable()
	if err != nil {
		return profilerBenchRow{}, err
	}
	args := []string{"bench", "profiler", "--json", "--hz", strconv.Itoa(hz),
		"--duration", duration.String(), "--window", window.String(), fmt.Sprintf("--off-cpu=%v", offCPU)}
	out, err := exec.Command(self, args...).Output()
	if err != nil {
		return profilerBenchRow{}, fmt.Errorf("bench child at %d Hz: %w", hz, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res struct {
		Results []profilerBenchRow `json:"results"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || len(res.Results) != 1 {
		return profilerBenchRow{}, fmt.Errorf("bench child at %d Hz: bad output %q (%v)", hz, lines[len(lines)-1], err)
	}
	return res.Results[0], nil
}

func benchProfilerOnce(hz int, offCPU bool, duration, window time.Duration, ncpu int) (profilerBenchRow, error) {
	row := profilerBenchRow{Hz: hz, OffCPU: offCPU}
	// The load: one shell busy loop per CPU, each killed by its own timeout
	// too, so nothing outlives the bench even if it is killed.
	secs := int((duration + 5*time.Second) / time.Second)
	var load []*exec.Cmd
	defer func() {
		for _, c := range load {
			// Kill the whole group: killing only timeout(1) would orphan its spinning shell.
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			c.Wait()
		}
	}()
	for i := 0; i < ncpu; i++ {
		c := exec.Command("timeout", strconv.Itoa(secs), "sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			return row, fmt.Errorf("starting load: %w", err)
		}
		load = append(load, c)
	}
	dir, err := os.MkdirTemp("", "triage-bench-profiler-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	store, err := flamegraph.NewStore(flamegraph.StoreConfig{Dir: dir})
	if err != nil {
		return row, err
	}
	row.BaseRSSMiB = profilerBenchStatusMiB("VmRSS:")
	rec, err := profiling.New(profiling.Config{Profiler: bpf.ProfilerOptions{FrequencyHz: hz, OffCPU: offCPU}})
	if err != nil {
		return row, err
	}
	defer rec.Close()
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	cost0, _ := rec.Stats()
	start := time.Now()
	for time.Since(start) < duration {
		rec.Wait(context.Background(), min(window, duration-time.Since(start)))
		res, err := rec.Collect()
		if err != nil {
			return row, err
		}
		if res.OnCPU != nil {
			for _, s := range res.OnCPU.Sample {
				row.Samples += s.Value[0]
			}
			if _, err := store.Save(res.Window.End, "cpu", res.OnCPU, flamegraph.SVGOptions{}); err != nil {
				return row, err
			}
		}
		if res.OffCPU != nil {
			if _, err := store.Save(res.Window.End, "offcpu", res.OffCPU, flamegraph.SVGOptions{}); err != nil {
				return row, err
			}
		}
		row.Windows++
	}
	wall := time.Since(start)
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cost1, _ := rec.Stats()
	cpu := profilerBenchTv(ru1.Utime) - profilerBenchTv(ru0.Utime) + profilerBenchTv(ru1.Stime) - profilerBenchTv(ru0.Stime)
	row.Seconds = wall.Seconds()
	row.AgentCPUPct = 100 * cpu.Seconds() / wall.Seconds() / float64(ncpu)
	row.BPFCPUPct = 100 * (bpf.TotalRunTime(cost1) - bpf.TotalRunTime(cost0)).Seconds() / wall.Seconds() / float64(ncpu)
	row.RSSMiB, row.PeakRSSMiB = profilerBenchStatusMiB("VmRSS:"), profilerBenchStatusMiB("VmHWM:")
	for _, w := range store.List() {
		row.StoreBytes += w.Bytes
	}
	return row, nil
}

func profilerBenchTv(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}

func profilerBenchStatusMiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func profilerBenchMachine() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if _, v, ok := strings.Cut(line, ":"); ok {
					return strings.TrimSpace(v)
				}
			}
		}
	}
	return runtime.GOARCH
}
