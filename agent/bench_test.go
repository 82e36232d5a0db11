package agent

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/wire"
)

// The decision round trip through a real agent over QUIC: one task per
// request, sequential (the added latency an upstream sees when idle) and
// from parallel goroutines (the batching path).
func BenchmarkAgentDecideQUIC(b *testing.B) {
	for _, mode := range []string{"sequential", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			ta := startAgent(b, Config{NoEBPF: true, ExperienceDir: disabledDir})
			cl := ta.dial(b)
			var id atomic.Uint64
			run := func() {
				n := id.Add(1)
				if _, err := cl.Decide(context.Background(), []*wire.Task{{Id: n, Class: "scoring", SlaMs: 200, CostMs: 15}}); err != nil {
					b.Error(err)
				}
			}
			b.ResetTimer()
			if mode == "sequential" {
				for i := 0; i < b.N; i++ {
					run()
				}
			} else {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						run()
					}
				})
			}
		})
	}
}

// The batcher alone, with the plain Go model, from 16 goroutines: the model
// calls saved by batching and the latency the window adds, side by side.
func BenchmarkBatcher(b *testing.B) {
	for _, w := range []time.Duration{0, 50 * time.Microsecond, 200 * time.Microsecond} {
		b.Run("window="+w.String(), func(b *testing.B) {
			var calls, tasks atomic.Int64
			bt := newBatcher(goDecider(), w, DefaultMaxBatch, func(n int, _ time.Duration) { calls.Add(1); tasks.Add(int64(n)) })
			defer bt.close()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				s := []policy.State{policy.Neutral}
				out := make([]policy.Decision, 1)
				for pb.Next() {
					if _, err := bt.decide(context.Background(), s, out); err != nil {
						b.Error(err)
					}
				}
			})
			if c := calls.Load(); c > 0 {
				b.ReportMetric(float64(tasks.Load())/float64(c), "tasks/batch")
			}
		})
	}
}
