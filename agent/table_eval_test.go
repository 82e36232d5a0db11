package agent

import (
	"testing"

	"github.com/triage-agent/triage/internal/testmodel"
	"github.com/triage-agent/triage/policy"
)

// The agent's model calls stay under the C heap's fixed mmap threshold:
// ModelMaxBatch rows of the shipped model's widest layer (every member's
// hidden units side by side) fit in DefaultMallocMmapThreshold.
func TestModelBatchesStayUnderTheMmapThreshold(t *testing.T) {
	sess := testmodel.Default(t, policy.Config{Device: policy.DeviceCPU, MaxBatch: ModelMaxBatch})
	widest := sess.MLP().ScratchLen() / 2
	if bytes := ModelMaxBatch * widest * 4; bytes >= DefaultMallocMmapThreshold {
		t.Fatalf("%d rows × %d floats = %d bytes a buffer, at or over the %d-byte mmap threshold", ModelMaxBatch, widest, bytes, DefaultMallocMmapThreshold)
	}
	if widest < policy.NumFeatures {
		t.Fatalf("widest layer %d floats, under the %d inputs: ScratchLen no longer measures it", widest, policy.NumFeatures)
	}
}

// tableStates are n cell-like states: neutral but for the queue, the SLA
// and the cost, spread so that the model answers more than one level.
func tableStates(n int) []policy.State {
	states := make([]policy.State, n)
	for i := range states {
		states[i] = policy.Neutral
		states[i][policy.FeatQueue] = float32(i%17) / 16
		states[i][policy.FeatSLA] = float32(i%29) / 28
		states[i][policy.FeatCost] = float32(i%13) / 12
	}
	return states
}

// BenchmarkTableEvaluation decides a table of 1,152 cells (the size of
// overload.json's under bench e2e) with the C heap's mmap threshold fixed
// as `triage agent` fixes it, through a session of policy's default batch
// cap (1,024) and one of the agent's (ModelMaxBatch).
func BenchmarkTableEvaluation(b *testing.B) {
	if err := policy.SetCHeapMmapThreshold(DefaultMallocMmapThreshold); err != nil {
		b.Skipf("cannot fix the mmap threshold here: %v", err)
	}
	states := tableStates(1152)
	out := make([]policy.Decision, len(states))
	for _, c := range []struct {
		name     string
		maxBatch int
	}{{"batch-1024", 1024}, {"agent", ModelMaxBatch}} {
		sess := testmodel.Default(b, policy.Config{Device: policy.DeviceCPU, MaxBatch: c.maxBatch})
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := sess.Decide(states, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(states)), "ns/cell")
		})
	}
}
