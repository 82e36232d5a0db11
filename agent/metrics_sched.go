package agent

import (
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// schedCollector exports how the kernel schedules the agent, read at
// scrape time from its main thread: the slice it runs with (its own
// --sched-slice, or the kernel's base slice) and its niceness, so an
// operator can see whether --sched-slice and --nice took effect on this
// node's kernel rather than trust a flag.
var schedCollector = scrapeCollector{descs: []*prometheus.Desc{descSchedSlice, descSchedNice}, collect: collectSched}

var (
	descSchedSlice = prometheus.NewDesc("triage_sched_slice_seconds", "Scheduling slice of the agent's main thread: --sched-slice where the kernel took it, else the kernel's own (absent where the kernel reports none: no EEVDF).", nil, nil)
	descSchedNice  = prometheus.NewDesc("triage_sched_nice", "Niceness of the agent's main thread (--nice).", nil, nil)
)

func collectSched(ch chan<- prometheus.Metric) {
	pid := os.Getpid()
	if attr, err := unix.SchedGetAttr(pid, 0); err == nil && attr.Runtime > 0 && fairPolicy(attr.Policy) {
		ch <- prometheus.MustNewConstMetric(descSchedSlice, prometheus.GaugeValue, float64(attr.Runtime)/1e9)
	}
	if prio, err := unix.Getpriority(unix.PRIO_PROCESS, pid); err == nil {
		// The raw syscall answers 20 - nice, so that it is never negative.
		ch <- prometheus.MustNewConstMetric(descSchedNice, prometheus.GaugeValue, float64(20-prio))
	}
}
