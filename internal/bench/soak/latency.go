package soak

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/policy"
)

// latencyHist counts round trips per microsecond up to a second (4 MB,
// whatever the run's length) and keeps the rarer longer ones as they are,
// so its quantiles are the nearest-rank quantiles of measure.Quantile at
// a microsecond's resolution.
type latencyHist struct {
	us    []uint32 // count per microsecond below histMaxUs
	total atomic.Int64

	mu   sync.Mutex
	slow []int64 // microseconds, at or above histMaxUs
}

const histMaxUs = 1_000_000

func newLatencyHist() *latencyHist { return &latencyHist{us: make([]uint32, histMaxUs)} }

func (h *latencyHist) observe(d time.Duration) {
	us := d.Microseconds()
	h.total.Add(1)
	if us < histMaxUs {
		atomic.AddUint32(&h.us[max(us, 0)], 1)
		return
	}
	h.mu.Lock()
	h.slow = append(h.slow, us)
	h.mu.Unlock()
}

// quantileUs is the nearest-rank q-quantile in microseconds; 0 when empty.
func (h *latencyHist) quantileUs(q float64) float64 {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := int64(policy.NearestRankIndex(int(n), q)) // 0-based
	var seen int64
	for us := range h.us {
		seen += int64(atomic.LoadUint32(&h.us[us]))
		if seen > rank {
			return float64(us)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	slow := append([]int64(nil), h.slow...)
	sort.Slice(slow, func(i, j int) bool { return slow[i] < slow[j] })
	if len(slow) == 0 {
		return histMaxUs
	}
	i := min(max(rank-seen, 0), int64(len(slow)-1))
	return float64(slow[i])
}
