package bpf

import "testing"

// BenchmarkAcceptRead is one iter/tcp walk of the socket table: its cost
// is dominated by the kernel visiting every bucket of the TCP hash tables,
// not by the number of sockets.
func BenchmarkAcceptRead(b *testing.B) {
	requireBPF(b)
	a := mustOpen(b, OpenAccept, AcceptOptions{})
	if err := a.WatchAll(true); err != nil {
		b.Fatal(err)
	}
	var (
		q   []ListenQueue
		err error
	)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if q, err = a.Read(q); err != nil {
			b.Fatal(err)
		}
	}
}
