package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// benchHidden is the hidden layout of the benchmarked network, the DQN
// size the trainer exports (12-64-64-5).
var benchHidden = []int{64, 64}

// benchDeciders returns the ORT session and the Go forward pass on the same
// weights, so one run measures both side by side.
func benchDeciders(b *testing.B) map[string]Decider {
	m := randomMLP(rand.New(rand.NewPCG(71, 72)), benchHidden...)
	meta := testMetadata("bench")
	return map[string]Decider{
		"ort": loadCPU(b, mustMarshal(b, m, meta)),
		"go":  NewGoDecider(m, meta),
	}
}

// BenchmarkDecideBatch256 reports the cost per decision when 256 tasks are
// decided in one call.
func BenchmarkDecideBatch256(b *testing.B) {
	const n = 256
	states := randomStates(rand.New(rand.NewPCG(1, 1)), n)
	for _, name := range []string{"ort", "go"} {
		b.Run(name, func(b *testing.B) {
			d := benchDeciders(b)[name]
			out := make([]Decision, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := d.Decide(states, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/decision")
		})
	}
}

// maxLatencySamples bounds the memory the batch-1 benchmark keeps.
const maxLatencySamples = 1 << 20

// BenchmarkDecideBatch1 reports p50 and p99 latency of single-task calls,
// from the recorded duration of each call.
func BenchmarkDecideBatch1(b *testing.B) {
	states := randomStates(rand.New(rand.NewPCG(2, 2)), 1)
	for _, name := range []string{"ort", "go"} {
		b.Run(name, func(b *testing.B) {
			d := benchDeciders(b)[name]
			out := make([]Decision, 1)
			lat := make([]time.Duration, 0, maxLatencySamples)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				if err := d.Decide(states, out); err != nil {
					b.Fatal(err)
				}
				if len(lat) < maxLatencySamples {
					lat = append(lat, time.Since(t0))
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(percentile(lat, 0.50).Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(percentile(lat, 0.99).Nanoseconds()), "p99-ns")
		})
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
