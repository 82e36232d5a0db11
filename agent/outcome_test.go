package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/triage-agent/triage/wire"
)

// Class statistics are service times, as the simulator trains them: an
// outcome's service_ms feeds them when the upstream reports it, and only
// without it does the latency (which includes the wait) stand in.
func TestClassStatisticsUseServiceTime(t *testing.T) {
	ta := startAgent(t, Config{NoEBPF: true})
	cl := ta.dial(t)
	ctx := context.Background()
	if _, err := cl.Decide(ctx, tasks(0, 6)); err != nil {
		t.Fatal(err)
	}
	// Tasks 1 and 4 are realtime-check, 2 and 5 scoring (see tasks).
	outs := []*wire.Outcome{
		{Id: 1, LatencyMs: 40, ServiceMs: 2, SlaMet: false},
		{Id: 4, LatencyMs: 60, ServiceMs: 2, SlaMet: false},
		{Id: 2, LatencyMs: 30, SlaMet: true},
		{Id: 5, LatencyMs: 30, SlaMet: true},
	}
	if _, err := cl.ReportOutcomes(ctx, outs); err != nil {
		t.Fatal(err)
	}
	if p50, p99, _ := ta.asm.Classes().Stats("realtime-check"); p50 != 2 || p99 != 2 {
		t.Errorf("realtime-check p50/p99 %v/%v, want the reported service time 2/2, not the 40–60 ms latencies", p50, p99)
	}
	if p50, _, _ := ta.asm.Classes().Stats("scoring"); p50 != 30 {
		t.Errorf("scoring p50 %v, want the latency 30 when no service time is reported", p50)
	}
	// A service time that is not a duration is refused, naming the field,
	// and the agent keeps serving.
	_, err := cl.ReportOutcomes(ctx, []*wire.Outcome{{Id: 3, LatencyMs: 5, ServiceMs: -1}})
	if err == nil || !strings.Contains(err.Error(), "service_ms") {
		t.Fatalf("negative service_ms: error %v, want one naming service_ms", err)
	}
	if _, err := cl.Decide(ctx, tasks(6, 3)); err != nil {
		t.Fatalf("decide after a bad outcome: %v", err)
	}
}
