// Package soak is `triage bench soak`: one `triage agent` process under
// sustained mixed load for a long run, sampled every second, so that an
// operator sees whether its memory, goroutines and descriptors stay flat
// and whether every acknowledged outcome reaches the experience log.
//
// The load, all over loopback from this process:
//
//   - deciders: Clients connections offering Rate tasks a second in all,
//     open loop (calls sent on a schedule, up to MaxInFlight per client
//     unanswered; deciders.go), remote decide calls (the agent's own
//     path), each reporting an outcome for every decision;
//   - subscribers: half on streams, half on QUIC datagrams;
//   - churn: a client that connects, says Hello and disconnects Churn
//     times a second;
//   - malformed: a client that sends a malformed frame on a new stream
//     MalformedRate times a second;
//   - reload: the model file replaced by a new version every ReloadEvery;
//   - the agent runs every probe this kernel supports and its flame-graph
//     recorder (unless NoEBPF).
//
// The figures: start is the median of the samples of the first
// sampleWindow seconds after the warm-up, end the median of the last
// sampleWindow seconds (medians, so that one sample taken while the churn
// client holds a connection does not decide a figure); p99_us is the
// decide round trip after the warm-up; counts are over the whole run.
package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Config is a soak run; the zero value of a field means its default.
type Config struct {
	Duration      time.Duration // the whole run, warm-up included; default 10m
	Warmup        time.Duration // before the start samples; default 1m
	Rate          int           // decided tasks a second over all deciders; default 5000
	Clients       int           // decider connections; default 16
	MaxInFlight   int           // decide calls sent and not yet answered, per client; default 64
	Batch         int           // tasks per decide call; default 1
	OutcomeBatch  int           // decisions whose outcomes go in one report; default 8
	Subscribers   int           // node-state subscribers, half on datagrams; default 8
	Churn         int           // connects and disconnects a second; default 50
	MalformedRate int           // malformed frames a second; default 20
	ReloadEvery   time.Duration // model hot reloads; default 30s
	AgentBin      string        // the triage binary to run the agent with; default this one
	NoEBPF        bool          // run the agent without eBPF (and so without its profiler)
	KeepDir       string        // keep the agent's files here; default a temporary directory, removed
	// Progress, when set, receives one line every ProgressEvery (default 10s).
	Progress      io.Writer
	ProgressEvery time.Duration
}

// Result is the run's figures; its JSON is the last line of
// `triage bench soak --json`, in this order.
type Result struct {
	DurationS         float64 `json:"duration_s"`
	Decisions         int64   `json:"decisions"`
	DecideErrors      int64   `json:"decide_errors"`
	Outcomes          int64   `json:"outcomes"`
	ExperienceRecords int64   `json:"experience_records"`
	LostRecords       int64   `json:"lost_records"`
	RSSMiBStart       float64 `json:"rss_mib_start"`
	RSSMiBEnd         float64 `json:"rss_mib_end"`
	RSSGrowthPct      float64 `json:"rss_growth_pct"`
	GoroutinesStart   int     `json:"goroutines_start"`
	GoroutinesEnd     int     `json:"goroutines_end"`
	FDsStart          int     `json:"fds_start"`
	FDsEnd            int     `json:"fds_end"`
	P99Us             float64 `json:"p99_us"`
	// OfferedPerS is the tasks sent a second (the schedule's Rate, less
	// what it could not send with MaxInFlight calls unanswered);
	// DecisionsPerS the decisions answered a second. Both over the whole
	// run.
	OfferedPerS   float64 `json:"offered_per_s"`
	DecisionsPerS float64 `json:"decisions_per_s"`

	Detail Detail `json:"-"`
}

// Detail is what the human report adds to the JSON figures.
type Detail struct {
	Warmup                       time.Duration
	Rate, MaxInFlight            int
	Sent, Unsent                 int64 // tasks sent; tasks the schedule asked for while MaxInFlight calls were unanswered
	P50Us                        float64
	HeapMiBStart, HeapMiBEnd     float64
	RSSMiBPeak                   float64
	OutcomeErrors                int64
	Snapshots                    int64 // node states the subscribers received
	ChurnConnects, ChurnFailures int64
	MalformedSent                int64 // malformed frames the agent answered with a stream error
	MalformedReconnects          int64
	Reloads, Swaps, ReloadFails  int64
	UnknownOutcomes              float64 // outcomes the agent did not track
	SegmentsRemoved              float64 // experience segments the cap removed (lost_records then counts them)
	TimedOutRecords              int64   // records of decided tasks whose outcome never came
	// GoroutinesIdleBefore and GoroutinesIdleAfter are the agent's
	// goroutines with no load on it, before the load and once its
	// connections closed (idle.go): what a leak leaves behind.
	GoroutinesIdleBefore, GoroutinesIdleAfter int
	ProbesAttached                            int
	FlamegraphWindows                         int
	Samples                                   []Sample
}

// JSON is the one-line JSON object of the figures.
func (r *Result) JSON() ([]byte, error) { return json.Marshal(r) }

// sampleWindow is how many one-second samples the start and end medians take.
const sampleWindow = 10

// ErrBadConfig reports a Config that cannot run.
var ErrBadConfig = errors.New("soak: bad config")

func (c *Config) defaults() error {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Minute
	}
	if c.Warmup <= 0 {
		c.Warmup = time.Minute
	}
	def(&c.Rate, 5000)
	def(&c.Clients, 16)
	def(&c.MaxInFlight, 64)
	def(&c.Batch, 1)
	def(&c.OutcomeBatch, 8)
	def(&c.Subscribers, 8)
	def(&c.Churn, 50)
	def(&c.MalformedRate, 20)
	if c.ReloadEvery <= 0 {
		c.ReloadEvery = 30 * time.Second
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 10 * time.Second
	}
	switch {
	case c.Warmup+2*time.Second > c.Duration:
		return fmt.Errorf("%w: a run of %v leaves nothing after a warm-up of %v", ErrBadConfig, c.Duration, c.Warmup)
	case c.Clients > 256 || c.Subscribers > 256:
		return fmt.Errorf("%w: at most 256 deciders and 256 subscribers", ErrBadConfig)
	case c.MaxInFlight > 4096:
		return fmt.Errorf("%w: %d calls in flight per client, at most 4096", ErrBadConfig, c.MaxInFlight)
	case c.Batch > 1024:
		return fmt.Errorf("%w: batch %d, at most 1024 (the agent's limit)", ErrBadConfig, c.Batch)
	case c.Rate < c.Clients:
		return fmt.Errorf("%w: a rate of %d over %d clients is under one task a second each", ErrBadConfig, c.Rate, c.Clients)
	case c.Rate > 1_000_000 || c.Churn > 1000 || c.MalformedRate > 1000:
		return fmt.Errorf("%w: rate %d, churn %d, malformed %d: beyond what a soak means", ErrBadConfig, c.Rate, c.Churn, c.MalformedRate)
	}
	return nil
}

// Run starts the agent, loads it for Duration and returns the figures.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	dir := cfg.KeepDir
	if dir == "" {
		d, err := os.MkdirTemp("", "triage-soak-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rl, err := newReloader(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return nil, err
	}
	ap, err := startAgent(ctx, agentConfig{bin: cfg.AgentBin, dir: dir, model: rl.path, noEBPF: cfg.NoEBPF,
		expMaxBytes: experienceCap(cfg)})
	if err != nil {
		return nil, err
	}
	defer ap.Stop()
	idleBefore := idleGoroutines(ctx, ap, idleSettle, 0)

	start := time.Now()
	runCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer cancel()
	measureFrom := start.Add(cfg.Warmup)
	lat := newLatencyHist()
	ds, err := startDeciders(runCtx, ap, cfg, lat, measureFrom)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	subs := &subscribers{}
	churn := &churner{}
	bad := &malformer{}
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(runCtx) }()
	}
	run(func(ctx context.Context) { subs.run(ctx, ap, cfg.Subscribers) })
	run(func(ctx context.Context) { churn.run(ctx, ap, cfg.Churn) })
	run(func(ctx context.Context) { bad.run(ctx, ap, cfg.MalformedRate) })
	run(func(ctx context.Context) { rl.run(ctx, cfg.ReloadEvery) })
	samples := sampleUntil(runCtx, ap, start, cfg, func(s Sample) string {
		return fmt.Sprintf("%4.0fs  sent %d (not sent %d)  decisions %d (errors %d)  outcomes %d  RSS %.1f MiB  heap %.1f MiB  goroutines %d  fds %d",
			s.At.Seconds(), ds.sent.Load(), ds.unsent.Load(), ds.decisions.Load(), ds.errors.Load(), ds.acked.Load(), s.RSSMiB, s.HeapMiB, s.Goroutines, s.FDs)
	})
	ds.wait()
	wg.Wait()
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	idleAfter := idleGoroutines(ctx, ap, idleAfterWait, idleBefore)

	if !ap.Alive() {
		return nil, fmt.Errorf("the agent died during the soak: %w", ap.Err())
	}
	m := ap.Scrape()
	res := &Result{
		DurationS: elapsed.Seconds(), Decisions: ds.decisions.Load(), DecideErrors: ds.errors.Load(), Outcomes: ds.acked.Load(),
		P99Us:       lat.quantileUs(0.99),
		OfferedPerS: float64(ds.sent.Load()) / elapsed.Seconds(), DecisionsPerS: float64(ds.decisions.Load()) / elapsed.Seconds(),
	}
	d := &res.Detail
	d.Warmup, d.P50Us, d.Samples = cfg.Warmup, lat.quantileUs(0.5), samples
	d.GoroutinesIdleBefore, d.GoroutinesIdleAfter = idleBefore, idleAfter
	d.Rate, d.MaxInFlight, d.Sent, d.Unsent = cfg.Rate, cfg.MaxInFlight, ds.sent.Load(), ds.unsent.Load()
	d.OutcomeErrors = ds.outcomeErrors.Load()
	d.Snapshots = subs.snapshots.Load()
	d.ChurnConnects, d.ChurnFailures = churn.connects.Load(), churn.failures.Load()
	d.MalformedSent, d.MalformedReconnects = bad.answered.Load(), bad.reconnects.Load()
	d.Reloads, d.Swaps, d.ReloadFails = rl.written.Load(), int64(m["triage_model_swaps_total"]), int64(m["triage_model_reload_failures_total"])
	d.UnknownOutcomes, d.SegmentsRemoved = m["triage_outcomes_unknown_total"], m["triage_experience_segments_removed_total"]
	d.ProbesAttached, d.FlamegraphWindows = int(m.SumPrefix("triage_probe_attached{")), int(m["triage_flamegraph_windows"])
	summarize(res, samples, cfg.Warmup)

	// The agent stops cleanly (its log synced and closed) before the log is read.
	ap.Stop()
	if err := ap.Err(); err != nil {
		return res, err
	}
	res.ExperienceRecords, d.TimedOutRecords, res.LostRecords, err = readBack(filepath.Join(dir, "experience"), ds.ackedIDs)
	return res, err
}

// experienceCap sizes the agent's experience cap for the whole run at
// twice a record's size, so that nothing acknowledged is removed by the
// cap (lost_records would count it): 5,000 outcomes a second for ten
// minutes are about 750 MB on disk.
func experienceCap(cfg Config) int64 {
	const perRecord = 512
	n := int64(cfg.Rate) * int64(cfg.Duration/time.Second+1) * perRecord
	return max(n, 256<<20)
}
