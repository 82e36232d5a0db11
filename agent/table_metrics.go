package agent

import (
	"github.com/prometheus/client_golang/prometheus"
)

// tableMetrics are the decision tables' and the local decisions' metrics.
type tableMetrics struct {
	refreshes   *prometheus.CounterVec // by result: current, rebuilt, failed
	refreshTime prometheus.Histogram
	evaluated   prometheus.Counter
	local       *prometheus.CounterVec // by the state's origin: table, rebuilt
	changed     prometheus.Counter
}

func newTableMetrics(p *tableProducer) *tableMetrics {
	m := &tableMetrics{
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "triage_decision_table_refreshes_total",
			Help: "Times a subscribed decision table was brought up to date, by result: current (no cell changed), rebuilt (a new epoch), failed (the model could not evaluate it; it ages)."}, []string{"result"}),
		refreshTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "triage_decision_table_refresh_seconds",
			Help: "Time to bring a decision table up to date (cell states, model on the cells that moved, guard).", Buckets: prometheus.ExponentialBuckets(1e-5, 2, 14)}),
		evaluated: prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_decision_table_evaluated_cells_total",
			Help: "Decision-table cells evaluated by the model."}),
		local: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "triage_local_decisions_total",
			Help: "Decisions clients took from a decision table and reported, by where the state logged for them came from: table (the cell they were decided from), rebuilt (that table was no longer kept; built at the report)."}, []string{"state"}),
		changed: prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_local_decisions_changed_total",
			Help: "Reported local decisions for which the agent, at the report, would have answered another priority (the guard's controller moved, or the state was rebuilt)."}),
	}
	for _, r := range []string{"current", "rebuilt", "failed"} {
		m.refreshes.WithLabelValues(r)
	}
	for _, s := range []string{"table", "rebuilt"} {
		m.local.WithLabelValues(s)
	}
	cells := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "triage_decision_table_cells", Help: "Cells of the current decision table (0 before any subscriber)."},
		func() float64 {
			if b := p.newest(); b != nil {
				return float64(b.layout.cells)
			}
			return 0
		})
	classes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "triage_decision_table_classes", Help: "Task classes in the current decision table."},
		func() float64 {
			if b := p.newest(); b != nil {
				return float64(len(b.layout.classes))
			}
			return 0
		})
	p.a.metrics.reg.MustRegister(m.refreshes, m.refreshTime, m.evaluated, m.local, m.changed, cells, classes)
	return m
}
