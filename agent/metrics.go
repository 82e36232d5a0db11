package agent

import (
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/internal/buildinfo"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/guard"
)

// metrics is the agent's Prometheus registry. Counters on the decision path
// are plain prometheus counters (lock-free); everything that is a view of
// another part's state (probes, sources, the endpoint, the experience log,
// the flame-graph store) is read when scraped, by Agent.collectMetrics.
type metrics struct {
	reg *prometheus.Registry

	decisions        [policy.NumActions]prometheus.Counter
	guarded          [guard.NumReasons]prometheus.Counter // by reason; none for guard.Network
	decideLatency    prometheus.Histogram
	batchSize        prometheus.Histogram
	modelLatency     prometheus.Histogram
	decideErrors     prometheus.Counter
	abandoned        prometheus.Counter
	outcomes         *prometheus.CounterVec
	outcomesUnknown  prometheus.Counter
	timeouts         prometheus.Counter
	reward           prometheus.Histogram
	reloadFailures   prometheus.Counter
	experienceErrors prometheus.Counter
	modelInfo        *prometheus.GaugeVec

	tlsReloadFailures   prometheus.Counter
	tokenReloadFailures prometheus.Counter
}

// decideLatencyBuckets bound triage_decide_latency_seconds: 5 µs to 0.23 s
// in steps of √2. A quantile read from a classic histogram is interpolated
// within its bucket, so it is only as good as the bucket's width: with
// doubling buckets a p99 anywhere between 80 and 160 µs read the same, on
// either side of the 100 µs the in-agent decide is held to (issue 15). At
// √2 a reading is within ±20% of the true quantile, for 33 series instead
// of 17. docs/footprint-history.md, "The in-agent tail at a finer grain".
var decideLatencyBuckets = prometheus.ExponentialBuckets(5e-6, math.Sqrt2, 32)

func newMetrics(a *Agent) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	decisions := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "triage_decisions_total", Help: "Decisions served, by priority (0 lowest .. 4 highest)."}, []string{"priority"})
	for p := range m.decisions {
		m.decisions[p] = decisions.WithLabelValues(strconv.Itoa(p))
	}
	guarded := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "triage_guard_decisions_total",
		Help: "Decisions the guard's controller made instead of the model, by reason (disagree: the model's ensemble members split; out_of_range: a state outside the model's training; kept_urgent: the model sent to the background urgent work the controller admits and that can still meet its SLA; slim_margin: the model preferred its priority to the controller's by less than --guard-min-advantage)."}, []string{"reason"})
	for r := guard.Network + 1; r < guard.NumReasons; r++ {
		m.guarded[r] = guarded.WithLabelValues(r.String())
	}
	m.decideLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "triage_decide_latency_seconds", Help: "Time from a decide request reaching the agent to its answer (state assembly, batching wait, model, bookkeeping).",
		Buckets: decideLatencyBuckets,
	})
	m.modelLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "triage_model_batch_seconds", Help: "Duration of one batched model call.",
		Buckets: prometheus.ExponentialBuckets(2e-6, 2, 16),
	})
	m.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "triage_decide_batch_tasks", Help: "Tasks per batched model call (across clients).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 11),
	})
	m.decideErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_decide_errors_total", Help: "Decide requests that failed in the model."})
	m.abandoned = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_decide_abandoned_tasks_total", Help: "Tasks whose client went away before their batch finished."})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "triage_outcomes_total", Help: "Outcomes turned into rewards, by reward phase."}, []string{"phase"})
	m.outcomesUnknown = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_outcomes_unknown_total", Help: "Outcomes for tasks the agent does not track (decided before a restart, or timed out)."})
	m.timeouts = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_task_timeouts_total", Help: "Decided tasks whose outcome never came within the task timeout."})
	m.reward = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "triage_reward", Help: "Reward of finished tasks.", Buckets: prometheus.LinearBuckets(-1, 0.1, 21)})
	m.reloadFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_model_reload_failures_total", Help: "Model files refused (the running model kept serving); the log says why."})
	m.experienceErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_experience_errors_total", Help: "Experience records that could not be appended."})
	m.modelInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "triage_model_info", Help: "The serving model (value 1)."}, []string{"version", "device", "schema"})
	m.tlsReloadFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_tls_reload_failures_total", Help: "Changed TLS certificate, key or client CA files that could not be loaded (the ones in force kept serving); the log says why."})
	m.tokenReloadFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "triage_token_reload_failures_total", Help: "Changed token files refused (the tokens in force stayed); the log says why."})

	m.reg.MustRegister(decisions, guarded, m.decideLatency, m.modelLatency, m.batchSize, m.decideErrors, m.abandoned,
		m.outcomes, m.outcomesUnknown, m.timeouts, m.reward, m.reloadFailures, m.experienceErrors, m.modelInfo,
		m.tlsReloadFailures, m.tokenReloadFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		scrapeCollector{descs: agentDescs, collect: a.collectMetrics}, cHeapCollector, schedCollector)
	return m
}

// buildInfo registers triage_build_info, once the ONNX Runtime library is
// loaded (its version is a label).
func (m *metrics) buildInfo(ortVersion string) {
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "triage_build_info", Help: "The agent's build (value 1): version, VCS revision, Go and ONNX Runtime versions.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion, "onnxruntime": ortVersion},
	})
	build.Set(1)
	m.reg.MustRegister(build)
}

func (m *metrics) observeBatch(tasks int, took time.Duration) {
	m.batchSize.Observe(float64(tasks))
	m.modelLatency.Observe(took.Seconds())
}

func (m *metrics) modelChanged(version, device string) {
	m.modelInfo.Reset()
	m.modelInfo.WithLabelValues(version, device, policy.StateSchema).Set(1)
}

// scrapeCollector is a prometheus.Collector whose values are read when
// scraped: it describes descs, every metric collect may send (a value the
// node does not have is left out, not sent as zero), and collects by
// calling collect.
type scrapeCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

var (
	descProbe       = prometheus.NewDesc("triage_probe_attached", "1 when the eBPF probe is attached (tier: how), 0 when it fell back (tier none; /readyz and the log say why).", []string{"probe", "tier"}, nil)
	descProbeCPU    = prometheus.NewDesc("triage_probe_cpu_seconds_total", "In-kernel run time of the probe's BPF programs (charged to the tasks they interrupt, not to the agent); with --probe-cpu-stats only.", []string{"probe"}, nil)
	descSource      = prometheus.NewDesc("triage_feature_source", "1 for the source that feeds each state feature (ebpf, netlink, procfs, none, descriptor, outcomes, agent).", []string{"feature", "source"}, nil)
	descQueueLen    = prometheus.NewDesc("triage_queue_tasks", "Tasks decided and not yet finished (feature 0's numerator).", nil, nil)
	descReserve     = prometheus.NewDesc("triage_background_reserve", "Share of the upstream's workers that background work (priority 0) should leave free now, as sent with every answer and table: 0.25 calm, 0.5 while recent tasks ran at least 1.25 times their described cost (before any reported a service time: while the run-queue p99 is 1 ms or more), sized down towards 0.25 to three times the foreground's load of the last second where the run-queue p99 is under 1 ms; 1e-6 (none held) where no foreground task came for 5 s on a calm node whose run-queue p99 is known and under 1 ms.", nil, nil)
	descShort       = prometheus.NewDesc("triage_background_short_seconds", "Expected cost (seconds) up to which a background task may still start while the background reserve holds more than a quarter of the workers, as sent with every answer and table: the tightest SLA among the foreground tasks of the last second over the work's slowdown; 0 while none.", nil, nil)
	descUrgent      = prometheus.NewDesc("triage_background_urgent_sla_seconds", "SLA (seconds) up to which a background task that can still meet it may start whatever the background reserve holds, as the foreground does, as sent with every answer and table: four times the tightest SLA among the foreground tasks of the last second; 0 while none.", nil, nil)
	descQueueCap    = prometheus.NewDesc("triage_queue_capacity", "Worker slots of the upstream executor on this node (feature 0's denominator).", nil, nil)
	descReloads     = prometheus.NewDesc("triage_model_swaps_total", "Models hot-swapped in.", nil, nil)
	descReloadErrAt = prometheus.NewDesc("triage_model_reload_last_failure_timestamp_seconds", "When the last model file was refused (0: never).", nil, nil)
	descConns       = prometheus.NewDesc("triage_endpoint_connections_total", "Connections accepted (QUIC and TCP).", nil, nil)
	descRejected    = prometheus.NewDesc("triage_endpoint_rejected_connections_total", "Connections refused (limits, authentication), QUIC and TCP.", nil, nil)
	descStreamErr   = prometheus.NewDesc("triage_endpoint_stream_errors_total", "Native streams closed with an error code.", nil, nil)
	descDatagrams   = prometheus.NewDesc("triage_endpoint_state_datagrams_total", "Node-state datagrams sent.", nil, nil)
	descCodecRatio  = prometheus.NewDesc("triage_codec_compression_ratio", "Payload bytes over wire bytes of the delta codec on the endpoint's streams.", nil, nil)
	descExpRecords  = prometheus.NewDesc("triage_experience_records_total", "Experience records appended.", nil, nil)
	descExpBytes    = prometheus.NewDesc("triage_experience_bytes_total", "Experience bytes appended.", nil, nil)
	descExpRemoved  = prometheus.NewDesc("triage_experience_segments_removed_total", "Experience segments removed by the size cap.", nil, nil)
	descFGWindows   = prometheus.NewDesc("triage_flamegraph_windows", "Flame-graph windows kept on disk.", nil, nil)
	descFGBytes     = prometheus.NewDesc("triage_flamegraph_bytes", "Bytes of the flame-graph windows on disk.", nil, nil)
	descFGFallback  = prometheus.NewDesc("triage_flamegraph_unwind_fallback_samples_total", "On-CPU samples whose user stack was partly walked by frame pointer where unwind tables were wanted, by reason.", []string{"reason"}, nil)
	descFGCache     = prometheus.NewDesc("triage_flamegraph_symbol_cache_bytes", "Memory of the symboliser's cache: symbol tables, inline indexes, unwind tables, JIT maps.", nil, nil)
	descFGKallsyms  = prometheus.NewDesc("triage_flamegraph_kallsyms_reads_total", "Reads of /proc/kallsyms: one at start, then one (two when modules changed) for each flame-graph window holding kernel functions not named before.", nil, nil)
	descShadowTasks = prometheus.NewDesc("triage_shadow_tasks_total", "Tasks the shadow model decided.", []string{"model"}, nil)
	descShadowAgree = prometheus.NewDesc("triage_shadow_agreement_ratio", "Fraction of tasks where the shadow model chose the serving model's priority.", []string{"model"}, nil)
	descShadowQDiff = prometheus.NewDesc("triage_shadow_mean_abs_q_diff", "Mean |Q_shadow - Q_serving| over tasks and levels.", []string{"model"}, nil)
	descShadowDrop  = prometheus.NewDesc("triage_shadow_dropped_tasks_total", "Tasks not shadow-evaluated because the shadow queue was full.", []string{"model"}, nil)
	descReady       = prometheus.NewDesc("triage_ready", "1 when /readyz answers ready.", nil, nil)
	descCgOverflow  = prometheus.NewDesc("triage_runq_cgroups_overflow", "Cgroups asked to be watched that the per-cgroup run-queue map had no room for: their tasks count node-wide only.", nil, nil)
	descSysCgOver   = prometheus.NewDesc("triage_syscall_cgroups_overflow", "Cgroups asked to be watched that the syscall probe's cgroup map had no room for: their syscalls are not timed.", nil, nil)
	descSysPIDOver  = prometheus.NewDesc("triage_syscall_pids_overflow", "Processes asked to be watched that the syscall probe's pid map had no room for: their syscalls are not timed.", nil, nil)
	descSysUntimed  = prometheus.NewDesc("triage_syscall_untimed_total", "Syscalls of watched tasks not timed because the syscall probe's in-flight map was full.", nil, nil)
)

// agentDescs are the metrics of the other parts' state, which
// collectMetrics reads at scrape time.
var agentDescs = []*prometheus.Desc{descProbe, descProbeCPU, descSource, descQueueLen, descReserve, descShort, descUrgent, descQueueCap, descReloads, descReloadErrAt,
	descConns, descRejected, descStreamErr, descDatagrams, descCodecRatio, descExpRecords, descExpBytes, descExpRemoved,
	descFGWindows, descFGBytes, descFGFallback, descFGCache, descFGKallsyms, descShadowTasks, descShadowAgree, descShadowQDiff, descShadowDrop, descReady, descCgOverflow,
	descSysCgOver, descSysPIDOver, descSysUntimed}

// collectMetrics reads the other parts' state (agentDescs) at scrape time.
func (a *Agent) collectMetrics(ch chan<- prometheus.Metric) {
	node := a.node.Load()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	if node != nil {
		for _, p := range node.signals.Probes {
			v, tier := 0.0, "none"
			if p.Attached {
				v, tier = 1, p.Tier
			}
			gauge(descProbe, v, p.Name, tier)
			if a.cfg.ProbeCPUStats && p.Attached {
				counter(descProbeCPU, p.CPUSeconds, p.Name)
			}
		}
		for i, f := range node.features {
			gauge(descSource, 1, policy.FeatureNames[i], string(f.Source))
		}
		gauge(descQueueLen, float64(node.wire.GetQueueLen()))
		gauge(descReserve, float64(node.wire.GetBackgroundReserve()))
		gauge(descShort, float64(node.wire.GetBackgroundShortMs())/1000)
		gauge(descUrgent, float64(node.wire.GetBackgroundUrgentSlaMs())/1000)
		gauge(descCgOverflow, float64(node.signals.RunQueue.CgroupsOverflow))
		sys := &node.signals.Syscall
		gauge(descSysCgOver, float64(sys.CgroupsOverflow))
		gauge(descSysPIDOver, float64(sys.PIDsOverflow))
		counter(descSysUntimed, float64(sys.Untimed))
	}
	gauge(descQueueCap, float64(a.cfg.Workers))
	ready := 0.0
	if ok, _ := a.readiness(); ok {
		ready = 1
	}
	gauge(descReady, ready)
	if a.model != nil {
		st := a.model.Stats()
		counter(descReloads, float64(st.Swaps))
		at := 0.0
		if st.LastError != nil {
			at = float64(st.LastErrorAt.UnixNano()) / 1e9
		}
		gauge(descReloadErrAt, at)
	}
	if a.server != nil {
		st := a.server.Stats()
		counter(descConns, float64(st.Conns.Load()))
		counter(descRejected, float64(st.RejectedConns.Load()))
		counter(descStreamErr, float64(st.StreamErrors.Load()))
		counter(descDatagrams, float64(st.DatagramsSent.Load()))
		if payload, wireBytes, ok := codecBytes(st); ok && wireBytes > 0 {
			gauge(descCodecRatio, float64(payload)/float64(wireBytes))
		}
	}
	if a.exp != nil {
		st := a.exp.Stats()
		counter(descExpRecords, float64(st.Appended))
		counter(descExpBytes, float64(st.Bytes))
		counter(descExpRemoved, float64(st.SegmentsRemoved))
	}
	if a.store != nil {
		ws := a.store.List()
		var b int64
		for _, w := range ws {
			b += w.Bytes
		}
		gauge(descFGWindows, float64(len(ws)))
		gauge(descFGBytes, float64(b))
	}
	if a.prof != nil {
		for reason, n := range a.prof.UnwindFallbacks() {
			counter(descFGFallback, float64(n), reason)
		}
		gauge(descFGCache, float64(a.prof.SymbolCacheBytes()))
		counter(descFGKallsyms, float64(a.prof.KernelSymbolReads()))
	}
	if a.shadow != nil {
		st := a.shadow.Stats()
		counter(descShadowTasks, float64(st.Tasks), st.Model)
		gauge(descShadowAgree, st.AgreementRate, st.Model)
		gauge(descShadowQDiff, st.MeanAbsQDiff, st.Model)
		counter(descShadowDrop, float64(st.Dropped), st.Model)
	}
}

// codecBytes is what the endpoint wrote on native streams and datagrams:
// payload bytes before the delta codec and frame bytes after it.
func codecBytes(st *serve.Stats) (payload, wireBytes uint64, ok bool) {
	p, w := st.PayloadBytes.Load(), st.WireBytes.Load()
	return uint64(max(p, 0)), uint64(max(w, 0)), w > 0
}
