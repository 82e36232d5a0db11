package e2e

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

type scrapedAgent struct {
	meanDecideUs, meanBatch   float64
	p50DecideUs, p99DecideUs  float64
	fgWindows, probesAttached int
}

// scrapeAgent reads a few numbers from the agent's /metrics.
func scrapeAgent(admin string) scrapedAgent {
	var s scrapedAgent
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	vals := map[string]float64{}
	var buckets []bucket
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		if le, ok := strings.CutPrefix(name, `triage_decide_latency_seconds_bucket{le="`); ok {
			bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
			if err == nil {
				buckets = append(buckets, bucket{bound, x})
			}
			continue
		}
		if strings.HasPrefix(name, "triage_probe_attached{") {
			if x == 1 {
				s.probesAttached++
			}
			continue
		}
		vals[name] = x
	}
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
