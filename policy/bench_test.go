package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/triage-agent/triage/policy/defaultmodel"
)

// benchHidden is the hidden layout of the benchmarked network, one member
// of the DQN the trainer exports (21-64-64-5).
var benchHidden = []int{64, 64}

// v1Hidden is the layout of the state-v1 default model
// (testdata/models/default-v1.onnx: five 64-wide members side by side,
// 12-320-320-5). A v3 build refuses that file's schema, so the shipped
// model's benchmark runs a network of its size with v3's 21 inputs: the
// 9 extra inputs add 2,880 of its 105,000 multiply-adds.
var v1Hidden = []int{320, 320}

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
	for _, name := range []string{"ort", "go"} {
		b.Run(name, func(b *testing.B) { benchBatch(b, benchDeciders(b)[name], 256) })
	}
}

// BenchmarkDecideBatch1 reports p50 and p99 latency of single-task calls,
// from the recorded duration of each call.
func BenchmarkDecideBatch1(b *testing.B) {
	for _, name := range []string{"ort", "go"} {
		b.Run(name, func(b *testing.B) { benchLatency(b, benchDeciders(b)[name]) })
	}
}

// BenchmarkShippedModel runs the embedded default model through ONNX
// Runtime beside a network of the v1 default model's size, in one run:
// cost per decision at batch 256, p50/p99 at batch 1.
func BenchmarkShippedModel(b *testing.B) {
	models := map[string]func() []byte{
		"default": defaultmodel.Bytes,
		"v1-size": func() []byte {
			return mustMarshal(b, randomMLP(rand.New(rand.NewPCG(73, 74)), v1Hidden...), testMetadata("v1-size"))
		},
	}
	for _, name := range []string{"default", "v1-size"} {
		b.Run(name+"/batch256", func(b *testing.B) { benchBatch(b, loadCPU(b, models[name]()), 256) })
		b.Run(name+"/batch1", func(b *testing.B) { benchLatency(b, loadCPU(b, models[name]())) })
	}
}

func benchBatch(b *testing.B, d Decider, n int) {
	states := randomStates(rand.New(rand.NewPCG(1, 1)), n)
	out := make([]Decision, n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := d.Decide(states, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/decision")
}

// maxLatencySamples bounds the memory the batch-1 benchmarks keep.
const maxLatencySamples = 1 << 20

func benchLatency(b *testing.B, d Decider) {
	states := randomStates(rand.New(rand.NewPCG(2, 2)), 1)
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
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
