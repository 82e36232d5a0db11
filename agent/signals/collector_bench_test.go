package signals

import (
	"os"
	"testing"
)

// BenchmarkCollectorSample is the cost of one sampling pass: "tick" is a
// pass with only the BPF map reads due (4 per second by default), "full"
// one where every procfs read and the accept walk are due too (once per
// second by default). CPU per second is about 3 x tick + 1 x full.
func BenchmarkCollectorSample(b *testing.B) {
	for _, mode := range []struct {
		name string
		cfg  Config
		full bool
	}{
		{"ebpf/tick", Config{}, false}, {"ebpf/full", Config{}, true},
		{"procfs/tick", Config{DisableBPF: true}, false}, {"procfs/full", Config{DisableBPF: true}, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			if !mode.cfg.DisableBPF && os.Geteuid() != 0 {
				b.Skip("eBPF probes need root")
			}
			c, err := New(mode.cfg, WithInterval(1<<62))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if mode.full {
				c.everyReadDue()
			}
			var s Snapshot
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Sample()
				c.Snapshot(&s)
			}
		})
	}
}

// everyReadDue makes every throttled read run on each Sample.
func (c *Collector) everyReadDue() {
	for _, t := range []*throttle{&c.runq.slow, &c.accept.slow, &c.blkio.slow, &c.tcp.slow, &c.cpu.slow} {
		t.every = 0
	}
}
