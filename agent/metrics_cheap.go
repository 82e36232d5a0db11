package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/triage-agent/triage/policy"
)

// cHeapCollector exports the C heap (ONNX Runtime's memory, which the Go
// collector cannot see) at scrape time: what it holds, what its arenas keep
// free, and how many arenas there are, so an operator can tell a C heap
// that grows from a Go heap that does (docs/footprint.md).
var cHeapCollector = scrapeCollector{descs: []*prometheus.Desc{descCHeapBytes, descCHeapArenas}, collect: collectCHeap}

var (
	descCHeapBytes  = prometheus.NewDesc("triage_c_heap_bytes", "The C library's heap (ONNX Runtime's memory), from mallinfo2: in_use (allocated chunks), free (free chunks the arenas keep).", []string{"state"}, nil)
	descCHeapArenas = prometheus.NewDesc("triage_c_heap_arenas", "glibc malloc arenas in the process, the main one included (bounded by MALLOC_ARENA_MAX; `triage agent --malloc-arenas`).", nil, nil)
)

func collectCHeap(ch chan<- prometheus.Metric) {
	h := policy.ReadCHeap()
	if h.Arenas < 0 {
		return // not glibc: nothing to report
	}
	ch <- prometheus.MustNewConstMetric(descCHeapBytes, prometheus.GaugeValue, float64(h.InUse), "in_use")
	ch <- prometheus.MustNewConstMetric(descCHeapBytes, prometheus.GaugeValue, float64(h.Free), "free")
	ch <- prometheus.MustNewConstMetric(descCHeapArenas, prometheus.GaugeValue, float64(h.Arenas))
}
