package signals

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"

	agentsignals "github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/internal/bench/proc"
)

// Footprint is what `triage signals --footprint D` prints: the process's
// own cost of running the collector for D (what the signals layer alone
// costs an agent).
type Footprint struct {
	Seconds    float64 `json:"seconds"`
	CPUPercent float64 `json:"cpu_percent"` // user+sys / wall, of one CPU
	RSSMiB     float64 `json:"rss_mib"`     // VmRSS at the end
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	HeapMiB    float64 `json:"heap_mib"`
	Samples    int     `json:"samples"`
	Sources    string  `json:"sources"`
}

// MeasureFootprint runs a collector with cfg for d, taking one snapshot a
// second as the live view does, and writes this process's Footprint to w
// as JSON: the child side of the bench's footprint measurement.
func MeasureFootprint(cfg agentsignals.Config, d time.Duration, w io.Writer) error {
	col, err := agentsignals.New(cfg)
	if err != nil {
		return err
	}
	defer col.Close()
	var snap agentsignals.Snapshot
	// Measure from after the probes are loaded: loading is a one-off.
	u0, _ := proc.ReadUsage(proc.Self)
	start := time.Now()
	samples := 0
	for time.Since(start) < d {
		time.Sleep(time.Second) // what the live view does: one snapshot a second
		col.Snapshot(&snap)
		samples++
	}
	u1, _ := proc.ReadUsage(proc.Self)
	wall := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return json.NewEncoder(w).Encode(Footprint{
		Seconds:    wall.Seconds(),
		CPUPercent: 100 * (u1.CPU - u0.CPU).Seconds() / wall.Seconds(),
		RSSMiB:     proc.MiB(u1.RSS),
		PeakRSSMiB: proc.MiB(u1.PeakRSS),
		HeapMiB:    float64(ms.HeapInuse) / (1 << 20),
		Samples:    samples,
		Sources: fmt.Sprintf("runq=%s accept=%s blkio=%s syscall=%s tcp=%s", snap.RunQueue.Source.Kind, snap.Accept.Source.Kind,
			snap.Blkio.Source.Kind, snap.Syscall.Source.Kind, snap.TCP.Source.Kind),
	})
}

// benchFootprint runs `triage signals --footprint D` (the running binary)
// as a child, idle and while this process makes load on every probe, and
// reports the child's own RSS and CPU: the signals layer alone.
func benchFootprint(res *Result, d time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	res.Footprint = map[string]*Footprint{}
	for _, mode := range []string{"idle", "load"} {
		ctx, cancel := context.WithTimeout(context.Background(), d+60*time.Second)
		cmd := exec.CommandContext(ctx, exe, "signals", "--footprint", d.String())
		cmd.Stderr = os.Stderr
		var stopLoad func()
		if mode == "load" {
			stopLoad = startProbeLoad()
		}
		out, err := cmd.Output()
		if stopLoad != nil {
			stopLoad()
		}
		cancel()
		if err != nil {
			return fmt.Errorf("footprint child (%s): %w", mode, err)
		}
		var fp Footprint
		if err := json.Unmarshal(out, &fp); err != nil {
			return fmt.Errorf("footprint child output %q: %w", out, err)
		}
		res.Footprint[mode] = &fp
	}
	return nil
}
