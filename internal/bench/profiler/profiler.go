// Package profiler is `triage bench profiler`: what the flame-graph
// profiler costs the agent while every CPU is busy.
package profiler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/triage-agent/triage/agent/profiling"
	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/flamegraph"
	"github.com/triage-agent/triage/internal/bench/measure"
	"github.com/triage-agent/triage/internal/bench/proc"
)

// Row is one frequency's measurement.
type Row struct {
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

// Result is the JSON of `triage bench profiler --json` (fields in the
// order of their keys, as the line has always had them).
type Result struct {
	Bench   string `json:"bench"` // "profiler"
	CPUs    int    `json:"cpus"`
	Machine string `json:"machine"`
	Results []Row  `json:"results"`
}

// Options bound one bench.
type Options struct {
	Hz       []int         // sampling frequencies, one row each
	OffCPU   bool          // also run the off-CPU profiler
	Duration time.Duration // profiled time per frequency, (0, 10m]
	Window   time.Duration // window length: drain, symbolise, write pprof/folded/SVG
}

// Machine is the CPU model, or the architecture where the kernel names none.
func Machine() string {
	if m := measure.CPUModel(); m != "" {
		return m
	}
	return runtime.GOARCH
}

// Run measures each frequency while one spinner process per CPU keeps
// every CPU busy (processes, so their CPU time is not the agent's): it runs
// the recorder with a window store as the agent does, and reports this
// process's CPU% and RSS and the in-kernel BPF time. With more than one
// frequency each runs in a fresh `triage bench profiler` process (the
// running binary), so that RSS is not inherited from the previous run.
func Run(o Options) (*Result, error) {
	if o.Duration <= 0 || o.Duration > 10*time.Minute || o.Window <= 0 {
		return nil, fmt.Errorf("--duration must be in (0, 10m] and --window positive")
	}
	for _, hz := range o.Hz {
		if hz <= 0 {
			return nil, fmt.Errorf("bad --hz entry %d", hz)
		}
	}
	stats, err := bpf.EnableRunStats()
	if err != nil {
		return nil, err
	}
	defer stats.Close()
	ncpu := runtime.NumCPU()
	res := &Result{Bench: "profiler", Machine: Machine(), CPUs: ncpu}
	for _, hz := range o.Hz {
		var row Row
		var err error
		if len(o.Hz) == 1 {
			row, err = runOnce(hz, o.OffCPU, o.Duration, o.Window, ncpu)
		} else {
			row, err = runChild(hz, o.OffCPU, o.Duration, o.Window)
		}
		if err != nil {
			return nil, err
		}
		res.Results = append(res.Results, row)
	}
	return res, nil
}

func runChild(hz int, offCPU bool, duration, window time.Duration) (Row, error) {
	self, err := os.Executable()
	if err != nil {
		return Row{}, err
	}
	args := []string{"bench", "profiler", "--json", "--hz", strconv.Itoa(hz),
		"--duration", duration.String(), "--window", window.String(), fmt.Sprintf("--off-cpu=%v", offCPU)}
	out, err := exec.Command(self, args...).Output()
	if err != nil {
		return Row{}, fmt.Errorf("bench child at %d Hz: %w", hz, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || len(res.Results) != 1 {
		return Row{}, fmt.Errorf("bench child at %d Hz: bad output %q (%v)", hz, lines[len(lines)-1], err)
	}
	return res.Results[0], nil
}

func runOnce(hz int, offCPU bool, duration, window time.Duration, ncpu int) (Row, error) {
	row := Row{Hz: hz, OffCPU: offCPU}
	load, err := proc.StartLoad(proc.LoadConfig{Spinners: float64(ncpu), Name: "profiler-bench"})
	if err != nil {
		return row, fmt.Errorf("starting load: %w", err)
	}
	defer load.Close()
	dir, err := os.MkdirTemp("", "triage-bench-profiler-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	store, err := flamegraph.NewStore(flamegraph.StoreConfig{Dir: dir})
	if err != nil {
		return row, err
	}
	base, _ := proc.ReadUsage(proc.Self)
	row.BaseRSSMiB = proc.MiB(base.RSS)
	rec, err := profiling.New(profiling.Config{Profiler: bpf.ProfilerOptions{FrequencyHz: hz, OffCPU: offCPU}})
	if err != nil {
		return row, err
	}
	defer rec.Close()
	u0, _ := proc.ReadUsage(proc.Self)
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
	u1, _ := proc.ReadUsage(proc.Self)
	cost1, _ := rec.Stats()
	row.Seconds = wall.Seconds()
	row.AgentCPUPct = 100 * (u1.CPU - u0.CPU).Seconds() / wall.Seconds() / float64(ncpu)
	row.BPFCPUPct = 100 * (bpf.TotalRunTime(cost1) - bpf.TotalRunTime(cost0)).Seconds() / wall.Seconds() / float64(ncpu)
	row.RSSMiB, row.PeakRSSMiB = proc.MiB(u1.RSS), proc.MiB(u1.PeakRSS)
	for _, w := range store.List() {
		row.StoreBytes += w.Bytes
	}
	return row, nil
}
