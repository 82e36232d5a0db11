package decide

import (
	"context"
	"testing"
	"time"
)

// A short run of every cell: each protocol must answer every call, and the
// numbers must be internally consistent. Speed itself is not asserted here
// (see the benchmarks and `triage bench decide`).
func TestRunAllProtocols(t *testing.T) {
	res, err := Run(context.Background(), Options{Clients: 2, Duration: 150 * time.Millisecond, Warmup: 50 * time.Millisecond, Rate: 1000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * len(ProtocolOrder); len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		t.Logf("%+v", c)
		if c.Errors != 0 || c.Requests == 0 {
			t.Errorf("%s batch %d: %d requests, %d errors", c.Protocol, c.Batch, c.Requests, c.Errors)
		}
		if got, want := c.DecisionsPerS, c.RequestsPerSec*float64(c.Batch); got < want*0.999 || got > want*1.001 {
			t.Errorf("%s batch %d: %v decisions/s for %v requests/s", c.Protocol, c.Batch, got, c.RequestsPerSec)
		}
		if !(c.P50Us > 0 && c.P50Us <= c.P99Us && c.P99Us <= c.MaxUs) || c.BytesPerCall <= 0 {
			t.Errorf("%s batch %d: inconsistent latencies or bytes: %+v", c.Protocol, c.Batch, c)
		}
	}
}

func TestOptionsBounded(t *testing.T) {
	for _, o := range []Options{{Protocols: []string{"smtp"}}, {Batches: []int{0}}, {Batches: []int{5000}}, {Clients: 10000}} {
		if _, err := Run(context.Background(), o, nil); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// go test -bench Decide ./internal/bench/decide -benchtime 2000x
func benchProtocol(b *testing.B, proto string, batch int) {
	o := Options{Clients: 1}
	if err := o.defaults(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// b.N milliseconds of calls; testing's first round (b.N = 1) gets
	// enough time for a few calls to come back.
	d := max(time.Duration(b.N)*time.Millisecond, 100*time.Millisecond)
	res, err := Run(ctx, Options{Clients: 4, Protocols: []string{proto}, Batches: []int{batch}, Duration: d, Warmup: 100 * time.Millisecond}, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := res.Cells[0]
	b.ReportMetric(c.DecisionsPerS, "decisions/s")
	b.ReportMetric(c.P99Us, "p99-µs")
	b.ReportMetric(c.BytesPerCall, "B/call")
}

func BenchmarkDecideNative64(b *testing.B) { benchProtocol(b, "native", 64) }
func BenchmarkDecideGRPC64(b *testing.B)   { benchProtocol(b, "grpc", 64) }
func BenchmarkDecideH3_64(b *testing.B)    { benchProtocol(b, "h3", 64) }
func BenchmarkDecideHTTP2_64(b *testing.B) { benchProtocol(b, "http2", 64) }
func BenchmarkDecideHTTP1_64(b *testing.B) { benchProtocol(b, "http1", 64) }
func BenchmarkDecideGRPCAgent64(b *testing.B) {
	benchProtocol(b, "grpc-agent", 64)
}
