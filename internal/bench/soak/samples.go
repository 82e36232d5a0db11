package soak

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/triage-agent/triage/internal/bench/measure"
	"github.com/triage-agent/triage/internal/bench/proc"
)

// Sample is the agent process once: its resident memory and open
// descriptors from /proc, its goroutines and Go heap from its /metrics.
type Sample struct {
	At         time.Duration // since the start
	RSSMiB     float64
	HeapMiB    float64
	Goroutines int
	FDs        int
}

// sampleUntil samples the agent every second until ctx ends, writing a
// progress line every cfg.ProgressEvery.
func sampleUntil(ctx context.Context, ap *agentProc, start time.Time, cfg Config, line func(Sample) string) []Sample {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var out []Sample
	lastProgress := start
	for {
		select {
		case <-ctx.Done():
			return out
		case now := <-tick.C:
			s, ok := sample(ap, now.Sub(start))
			if !ok {
				continue
			}
			out = append(out, s)
			if cfg.Progress != nil && now.Sub(lastProgress) >= cfg.ProgressEvery {
				lastProgress = now
				fmt.Fprintln(cfg.Progress, line(s))
			}
		}
	}
}

func sample(ap *agentProc, at time.Duration) (Sample, bool) {
	s := Sample{At: at}
	u, err := ap.Usage()
	if err != nil {
		return s, false
	}
	s.RSSMiB = proc.MiB(u.RSS)
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", ap.PID))
	if err != nil {
		return s, false
	}
	s.FDs = len(ents)
	m := ap.Scrape()
	g, ok1 := m["go_goroutines"]
	h, ok2 := m["go_memstats_heap_alloc_bytes"]
	if !ok1 || !ok2 {
		return s, false
	}
	s.Goroutines, s.HeapMiB = int(g), proc.MiB(int64(h))
	return s, true
}

// summarize fills the start and end figures: medians of the first
// sampleWindow samples after the warm-up and of the last sampleWindow.
func summarize(r *Result, samples []Sample, warmup time.Duration) {
	var after []Sample
	for _, s := range samples {
		if s.At >= warmup {
			after = append(after, s)
		}
	}
	if len(after) == 0 {
		return
	}
	n := min(sampleWindow, max(1, len(after)/2))
	first, last := after[:n], after[len(after)-n:]
	med := func(ss []Sample, f func(Sample) float64) float64 {
		xs := make([]float64, len(ss))
		for i, s := range ss {
			xs[i] = f(s)
		}
		return measure.Median(xs)
	}
	rss := func(s Sample) float64 { return s.RSSMiB }
	r.RSSMiBStart, r.RSSMiBEnd = med(first, rss), med(last, rss)
	if r.RSSMiBStart > 0 {
		r.RSSGrowthPct = 100 * (r.RSSMiBEnd - r.RSSMiBStart) / r.RSSMiBStart
	}
	r.GoroutinesStart = int(med(first, func(s Sample) float64 { return float64(s.Goroutines) }))
	r.GoroutinesEnd = int(med(last, func(s Sample) float64 { return float64(s.Goroutines) }))
	r.FDsStart = int(med(first, func(s Sample) float64 { return float64(s.FDs) }))
	r.FDsEnd = int(med(last, func(s Sample) float64 { return float64(s.FDs) }))
	heap := func(s Sample) float64 { return s.HeapMiB }
	r.Detail.HeapMiBStart, r.Detail.HeapMiBEnd = med(first, heap), med(last, heap)
	r.Detail.RSSMiBPeak = slices.MaxFunc(samples, func(a, b Sample) int {
		switch {
		case a.RSSMiB < b.RSSMiB:
			return -1
		case a.RSSMiB > b.RSSMiB:
			return 1
		}
		return 0
	}).RSSMiB
}
