package e2e

import (
	"math"
	"testing"

	"github.com/triage-agent/triage/internal/bench/agentproc"
)

func TestHistQuantile(t *testing.T) {
	bs := []bucket{{0.001, 50}, {0.002, 90}, {0.004, 100}, {math.Inf(1), 100}}
	if got := histQuantile(bs, 0.5); got != 0.001 {
		t.Fatalf("p50 = %v", got)
	}
	if got := histQuantile(bs, 0.7); math.Abs(got-0.0015) > 1e-12 {
		t.Fatalf("p70 = %v", got)
	}
	if got := histQuantile(bs, 0.99); math.Abs(got-0.0038) > 1e-12 {
		t.Fatalf("p99 = %v", got)
	}
	if histQuantile(nil, 0.5) != 0 {
		t.Fatal("empty")
	}
}

// The bench's figures come from the agent's histogram and gauges as
// /metrics writes them; the buckets need not come in order.
func TestReadScrape(t *testing.T) {
	text := `# HELP triage_decide_latency_seconds decide latency
triage_decide_latency_seconds_bucket{le="0.002"} 90
triage_decide_latency_seconds_bucket{le="0.001"} 50
triage_decide_latency_seconds_bucket{le="+Inf"} 100
triage_decide_latency_seconds_bucket{le="0.004"} 100
triage_decide_latency_seconds_sum 0.15
triage_decide_latency_seconds_count 100
triage_decide_batch_tasks_sum 400
triage_decide_batch_tasks_count 100
triage_probe_attached{probe="runqlat"} 1
triage_probe_attached{probe="tcp"} 0
triage_probe_attached{probe="blkio"} 1
triage_flamegraph_windows 3
`
	s := readScrape(agentproc.ParseMetrics(text))
	if s.probesAttached != 2 || s.fgWindows != 3 || s.meanBatch != 4 || math.Abs(s.meanDecideUs-1500) > 1e-9 {
		t.Fatalf("%+v", s)
	}
	if s.p50DecideUs != 1000 || math.Abs(s.p99DecideUs-3800) > 1e-6 {
		t.Fatalf("p50 %v p99 %v", s.p50DecideUs, s.p99DecideUs)
	}
}
