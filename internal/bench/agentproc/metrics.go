package agentproc

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxMetricsBytes bounds one scrape; the agent's /metrics is tens of KB.
const maxMetricsBytes = 16 << 20

// Metrics is one scrape of /metrics: sample (name with its labels, as
// written) to value.
type Metrics map[string]float64

// SumPrefix sums the samples whose name-with-labels starts with prefix,
// e.g. `triage_probe_attached{` for every probe.
func (m Metrics) SumPrefix(prefix string) float64 {
	var s float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

// Scrape reads the agent's /metrics; an empty map when it cannot (the
// benches report what they got rather than fail a long run on it).
func (p *Process) Scrape() Metrics {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.AdminAddr + "/metrics")
	if err != nil {
		return Metrics{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes))
	return ParseMetrics(string(b))
}

// ParseMetrics reads Prometheus text exposition: comments are skipped, a
// sample's value is its last space-separated field (a label value may
// hold spaces), a line whose value is not a number is dropped.
func ParseMetrics(text string) Metrics {
	m := Metrics{}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if x, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = x
		}
	}
	return m
}
