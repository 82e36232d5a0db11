package serve_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/wire"
)

// processCPU is the CPU time (user and system) this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTransportDecide is one decide call over the native protocol and
// over gRPC on the endpoint's TCP port, client and endpoint in this process,
// with the same backend (the plain Go bootstrap MLP) and the same requests,
// from 16 goroutines. Besides time per call it reports the CPU time per call
// (both ends), which a machine shared with other work disturbs far less
// than wall time, and allocations per call (both ends).
func BenchmarkTransportDecide(b *testing.B) {
	for _, batch := range []int{1, 64} {
		tasks := sampleTasks(batch)
		for _, proto := range []string{"native", "grpc"} {
			b.Run(fmt.Sprintf("%s/batch=%d", proto, batch), func(b *testing.B) {
				be, _ := goBackend()
				ts := startServer(b, serve.Config{}, be)
				var call func(context.Context) error
				switch proto {
				case "native":
					c := ts.dial(b, ts.clientConfig())
					call = func(ctx context.Context) error {
						_, err := c.Decide(ctx, tasks)
						return err
					}
				case "grpc":
					cc := grpcConn(b, ts, nil)
					call = func(ctx context.Context) error {
						out := new(wire.DecideResponse)
						return cc.Invoke(ctx, serve.GRPCDecideMethod, &wire.DecideRequest{ReqId: 1, Tasks: tasks}, out, grpc.WaitForReady(true))
					}
				}
				ctx := context.Background()
				if err := call(ctx); err != nil { // connect before the clock starts
					b.Fatal(err)
				}
				b.SetParallelism(8)
				b.ReportAllocs()
				cpu0 := processCPU(b)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := call(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}
