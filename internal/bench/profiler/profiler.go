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

// Row is one (frequency, unwind mode) measurement.
type Row struct {
	Hz          int     `json:"hz"`
	Unwind      string  `json:"unwind"` // "fp" or "dwarf" (profiling.UnwindMode)
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
	// BPFNsPerSample is the in-kernel run time of one sampler run (the
	// copy mode's includes the stack copy and the ring buffer write).
	BPFNsPerSample float64 `json:"bpf_ns_per_sample"`
	// SymbolCacheMiB is the symboliser's binary cache and JIT maps at the
	// end (symbol tables, inline indexes, unwind tables).
	SymbolCacheMiB float64 `json:"symbol_cache_mib"`
	// Fallbacks counts samples partly walked by frame pointer where tables
	// were wanted (dwarf mode), all reasons together.
	Fallbacks uint64 `json:"unwind_fallbacks"`
	// FallbackReasons splits Fallbacks by reason.
	FallbackReasons map[string]uint64 `json:"unwind_fallback_reasons,omitempty"`
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
	Hz       []int         // sampling frequencies
	Unwind   []string      // unwind modes ("fp", "dwarf"); one row per frequency and mode (default fp)
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

// Run measures each frequency and unwind mode while one spinner process per
// CPU keeps every CPU busy (processes, so their CPU time is not the agent's;
// sh, built without frame pointers, so dwarf mode copies every sample's
// stack): it runs the recorder with a window store as the agent does, and
// reports this process's CPU% and RSS, the in-kernel BPF time and its cost
// per sample. With more than one row each runs in a fresh
// `triage bench profiler` process (the running binary), so that RSS is not
// inherited from the previous run.
func Run(o Options) (*Result, error) {
	if o.Duration <= 0 || o.Duration > 10*time.Minute || o.Window <= 0 {
		return nil, fmt.Errorf("--duration must be in (0, 10m] and --window positive")
	}
	for _, hz := range o.Hz {
		if hz <= 0 {
			return nil, fmt.Errorf("bad --hz entry %d", hz)
		}
	}
	if len(o.Unwind) == 0 {
		o.Unwind = []string{string(profiling.UnwindFramePointers)}
	}
	var modes []profiling.UnwindMode
	for _, u := range o.Unwind {
		m, err := profiling.ParseUnwindMode(u)
		if err != nil || m == profiling.UnwindAuto {
			return nil, fmt.Errorf("bad --unwind entry %q: want fp or dwarf", u)
		}
		modes = append(modes, m)
	}
	stats, err := bpf.EnableRunStats()
	if err != nil {
		return nil, err
	}
	defer stats.Close()
	ncpu := runtime.NumCPU()
	res := &Result{Bench: "profiler", Machine: Machine(), CPUs: ncpu}
	for _, hz := range o.Hz {
		// The modes side by side at each frequency, so that both see the
		// same machine load.
		for _, mode := range modes {
			var row Row
			var err error
			if len(o.Hz)*len(modes) == 1 {
				row, err = runOnce(hz, mode, o.OffCPU, o.Duration, o.Window, ncpu)
			} else {
				row, err = runChild(hz, mode, o.OffCPU, o.Duration, o.Window)
			}
			if err != nil {
				return nil, err
			}
			res.Results = append(res.Results, row)
		}
	}
	return res, nil
}

func runChild(hz int, mode profiling.UnwindMode, offCPU bool, duration, window time.Duration) (Row, error) {
	self, err := os.Executable()
	if err != nil {
		return Row{}, err
	}
	args := []string{"bench", "profiler", "--json", "--hz", strconv.Itoa(hz), "--unwind", string(mode),
		"--duration", duration.String(), "--window", window.String(), fmt.Sprintf("--off-cpu=%v", offCPU)}
	out, err := exec.Command(self, args...).Output()
	if err != nil {
		return Row{}, fmt.Errorf("bench child at %d Hz, unwind %s: %w", hz, mode, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var res Result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || len(res.Results) != 1 {
		return Row{}, fmt.Errorf("bench child at %d Hz, unwind %s: bad output %q (%v)", hz, mode, lines[len(lines)-1], err)
	}
	return res.Results[0], nil
}

func runOnce(hz int, mode profiling.UnwindMode, offCPU bool, duration, window time.Duration, ncpu int) (Row, error) {
	row := Row{Hz: hz, Unwind: string(mode), OffCPU: offCPU}
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
	rec, err := profiling.New(profiling.Config{Profiler: bpf.ProfilerOptions{FrequencyHz: hz, OffCPU: offCPU}, Unwind: mode})
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
	if len(cost0) > 0 && len(cost1) > 0 && cost1[0].RunCount > cost0[0].RunCount {
		// The sampler is the first program; off-CPU's sched_switch runs
		// are not samples.
		row.BPFNsPerSample = float64((cost1[0].Runtime - cost0[0].Runtime).Nanoseconds()) / float64(cost1[0].RunCount-cost0[0].RunCount)
	}
	row.SymbolCacheMiB = proc.MiB(int64(rec.Symbolizer().CacheBytes()))
	row.FallbackReasons = rec.UnwindFallbacks()
	for _, n := range row.FallbackReasons {
		row.Fallbacks += n
	}
	row.RSSMiB, row.PeakRSSMiB = proc.MiB(u1.RSS), proc.MiB(u1.PeakRSS)
	for _, w := range store.List() {
		row.StoreBytes += w.Bytes
	}
	return row, nil
}
