package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/triage-agent/triage/agent/signals"
)

// footprint is what `triage signals --footprint D` prints: the process's
// own cost of running the collector for D (what the signals layer alone
// costs an agent), measured from rusage and /proc/self/status.
type footprint struct {
	Seconds    float64 `json:"seconds"`
	CPUPercent float64 `json:"cpu_percent"` // user+sys / wall, of one CPU
	RSSMiB     float64 `json:"rss_mib"`     // VmRSS at the end
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	HeapMiB    float64 `json:"heap_mib"`
	Samples    int     `json:"samples"`
	Sources    string  `json:"sources"`
}

func signalsFootprint(cfg signals.Config, d time.Duration, w io.Writer) error {
	col, err := signals.New(cfg)
	if err != nil {
		return err
	}
	defer col.Close()
	var snap signals.Snapshot
	// Measure from after the probes are loaded: loading is a one-off.
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	samples := 0
	for time.Since(start) < d {
		time.Sleep(time.Second) // what the live view does: one snapshot a second
		col.Snapshot(&snap)
		samples++
	}
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	wall := time.Since(start)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, peak := statusKiB("VmRSS:"), statusKiB("VmHWM:")
	return json.NewEncoder(w).Encode(footprint{
		Seconds:    wall.Seconds(),
		CPUPercent: 100 * cpu.Seconds() / wall.Seconds(),
		RSSMiB:     float64(rss) / 1024,
		PeakRSSMiB: float64(peak) / 1024,
		HeapMiB:    float64(ms.HeapInuse) / (1 << 20),
		Samples:    samples,
		Sources: fmt.Sprintf("runq=%s accept=%s blkio=%s syscall=%s tcp=%s", snap.RunQueue.Source.Kind, snap.Accept.Source.Kind,
			snap.Blkio.Source.Kind, snap.Syscall.Source.Kind, snap.TCP.Source.Kind),
	})
}

func statusKiB(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key) {
			var v int64
			fmt.Sscanf(strings.TrimSpace(l[len(key):]), "%d", &v)
			return v
		}
	}
	return 0
}
