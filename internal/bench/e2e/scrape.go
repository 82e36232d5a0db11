package e2e

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/triage-agent/triage/internal/bench/agentproc"
)

type scrapedAgent struct {
	meanDecideUs, meanBatch   float64
	p50DecideUs, p99DecideUs  float64
	fgWindows, probesAttached int
}

// decideBucketPrefix starts each cumulative bucket of the agent's decide
// latency histogram, up to its upper bound.
const decideBucketPrefix = `triage_decide_latency_seconds_bucket{le="`

// readScrape takes the bench's figures from one scrape of the agent.
func readScrape(vals agentproc.Metrics) scrapedAgent {
	var s scrapedAgent
	var buckets []bucket
	for name, x := range vals {
		if le, ok := strings.CutPrefix(name, decideBucketPrefix); ok {
			if bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64); err == nil {
				buckets = append(buckets, bucket{bound, x})
			}
		}
		if strings.HasPrefix(name, "triage_probe_attached{") && x == 1 {
			s.probesAttached++
		}
	}
	slices.SortFunc(buckets, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
	if n := vals["triage_decide_latency_seconds_count"]; n > 0 {
		s.meanDecideUs = vals["triage_decide_latency_seconds_sum"] / n * 1e6
	}
	if n := vals["triage_decide_batch_tasks_count"]; n > 0 {
		s.meanBatch = vals["triage_decide_batch_tasks_sum"] / n
	}
	s.fgWindows = int(vals["triage_flamegraph_windows"])
	s.p50DecideUs = histQuantile(buckets, 0.5) * 1e6
	s.p99DecideUs = histQuantile(buckets, 0.99) * 1e6
	return s
}

type bucket struct{ le, count float64 }

// histQuantile estimates a quantile from cumulative Prometheus buckets,
// interpolating linearly within the bucket (as histogram_quantile does):
// the agent exports a histogram, not its samples, so the nearest rank of
// measure.Quantile cannot be taken here.
func histQuantile(bs []bucket, q float64) float64 {
	if len(bs) == 0 {
		return 0
	}
	total := bs[len(bs)-1].count
	if total == 0 {
		return 0
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe
			}
			if b.count == prevCount {
				return b.le
			}
			return prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLe, prevCount = b.le, b.count
	}
	return prevLe
}
