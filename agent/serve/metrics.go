package serve

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/triage-agent/triage/wire"
)

// endpointMetrics are the endpoint's per-call metrics, labelled by
// protocol (native, h3, grpc, http1, http2), method (decide, outcomes,
// state, openapi, other) and code (ok, or the wire.Code's name in snake
// case: batch_too_large, invalid_argument, unauthenticated, ...). The
// agent registers them (Server.Collectors); the label sets are bounded.
type endpointMetrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	decisions [numProtocols]prometheus.Counter
	vec       *prometheus.CounterVec
}

func newEndpointMetrics() *endpointMetrics {
	m := &endpointMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "triage_endpoint_requests_total",
			Help: "Calls of the endpoint's API by protocol, method and result code (ok, or why it was refused).",
		}, []string{"protocol", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "triage_endpoint_request_duration_seconds",
			Help:    "Time from a decoded request to its answer, inside the endpoint (limits, backend), by protocol and method.",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2, 18),
		}, []string{"protocol", "method"}),
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "triage_endpoint_decisions_total",
			Help: "Decisions returned, by protocol.",
		}, []string{"protocol"}),
	}
	for p := range numProtocols {
		m.decisions[p] = m.vec.WithLabelValues(p.String())
	}
	return m
}

// observe counts one call; took is its time, 0 for a call refused before
// it was decoded (counted, not timed).
func (m *endpointMetrics) observe(p Protocol, method string, code wire.Code, took time.Duration) {
	m.requests.WithLabelValues(p.String(), method, codeLabel(code)).Inc()
	if took > 0 {
		m.duration.WithLabelValues(p.String(), method).Observe(took.Seconds())
	}
}

func codeLabel(c wire.Code) string { return strings.ReplaceAll(c.String(), " ", "_") }

// Collectors are the endpoint's Prometheus collectors, for the agent's
// registry.
func (s *Server) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.metrics.requests, s.metrics.duration, s.metrics.vec}
}
