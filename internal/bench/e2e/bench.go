package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/bench/agentproc"
	"github.com/triage-agent/triage/internal/bench/measure"
	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/train"
)

// BenchConfig is one `triage bench e2e`; the zero value of each field but
// Scenario means its default.
type BenchConfig struct {
	Scenario  *train.Scenario
	Seed      int64   // of the arrivals; 0: the scenario's
	TimeScale float64 // wall seconds per scenario second; 0: min(1, 25/duration)
	CPUTime   bool    // a task's cost is its worker's CPU time, not wall time
	// Baseline names the in-process baselines run on the same real
	// workers after FIFO and before the agent, comma-separated, or "all"
	// (BaselineNames); "" or "none" runs none.
	Baseline          string
	AgentBin          string // the triage binary to run the agent with; "": this one
	Model             string // the agent's model; "": its embedded default
	NoEBPF            bool   // run the agent on procfs signals, without the profiler
	DecideConcurrency int    // decide calls in flight; default 32
	// Decide is how the agent run gets its priorities: DecideLocal (the
	// default, "") from the decision table the agent pushes, with the tasks
	// it does not answer going to the agent; DecideRemote by a call for
	// every task.
	Decide string
	// AnswerOrder is how the executor orders the agent's answers within a
	// priority (the zero value: train.AdaptiveOrder, as the agent's
	// executors do). The in-process rules keep their own order.
	AnswerOrder train.AnswerOrder
	// KeepDir keeps the agent's experience log and flame graphs; "": a
	// temporary directory, removed.
	KeepDir string
	// IODir is where a format-v2 scenario's tasks and neighbours write.
	IODir string
	// IOWriteMs is the I/O unit every run counts a task's I/O part in (one
	// uncontended 64 KiB write+fsync on IODir's disk); 0: measured once at
	// the start (measureWrite). `triage bench e2e` gives the uncontended
	// level of the disk it measured, so runs and simulation share it.
	IOWriteMs float64
	// AgentFirst runs the agent right after FIFO, before the baselines,
	// instead of last. Every run pays the node as it is then (the disk's
	// writeback of the runs before, its drift), so comparing the two
	// orders shows how much of a difference is the order's.
	AgentFirst bool
	// AblateKernel adds a run after the agent's: the same arrivals decided
	// by a second agent process started with --ablate kernel (the same
	// model and guard, every kernel feature at its neutral value), labelled
	// "agent-ablated". The difference between the two agent rows is what
	// reading the kernel is worth on these workers, as `triage eval
	// --ablate kernel` measures it in the simulator.
	AblateKernel bool
	// OnRun, when set, receives each run as it finishes, in run order.
	OnRun func(*Result)
}

// Report is the whole bench: the runs, their evaluation table and what
// the agent process cost.
type Report struct {
	FIFO, Agent *Result
	// AgentAblated is the run of BenchConfig.AblateKernel (nil without it).
	AgentAblated *Result
	Rules        []*Result // the in-process baselines, in run order
	Evaluation   *train.Evaluation
	Stats        AgentStats
	// Simulated, when the caller filled it, is the same policies and
	// arrivals in the simulator, once per node (the "simulated" array of
	// the JSON line).
	Simulated []Simulated
}

// Simulated is every run's policy simulated on one node: its SLA
// attainment by the run's label (the agent's row is the model through the
// agent's guard, `triage eval`'s dqn).
type Simulated struct {
	Node          string             `json:"node"`
	SLAAttainment map[string]float64 `json:"sla_attainment"`
	// HeldBackStartsPerPeriod is the simulated agent's held-back starts
	// per period (AgentStats.HeldBackStartsPerPeriod's twin): where the
	// simulator's node counts as contended beside where the real one did.
	HeldBackStartsPerPeriod []int `json:"held_back_starts_per_period,omitempty"`
	// ShortStarts is the simulated agent's background tasks started as
	// short or urgent work on a held worker (AgentStats.ShortStarts's twin).
	ShortStarts int `json:"short_starts"`
	// ExpiredStarts is the simulated agent's tasks started after their
	// deadline had passed (AgentStats.ExpiredStarts's twin).
	ExpiredStarts int `json:"expired_starts"`
	// ServiceP50Ms is the simulated agent's median service time (ms) per
	// period and class (AgentStats.ServiceP50Ms's twin).
	ServiceP50Ms [][]float64 `json:"service_p50_ms,omitempty"`
}

// AgentStats is the "agent" object of the JSON line.
type AgentStats struct {
	GoodputRatio    float64 `json:"goodput_ratio_vs_fifo"`
	DecideP50Us     float64 `json:"decide_p50_us"`
	DecideP99Us     float64 `json:"decide_p99_us"`
	AgentSideMeanUs float64 `json:"agent_side_mean_us"`
	AgentSideP50Us  float64 `json:"agent_side_p50_us"`
	AgentSideP99Us  float64 `json:"agent_side_p99_us"`
	MeanBatch       float64 `json:"mean_batch_tasks"`
	CPUPercent      float64 `json:"cpu_percent"`
	// IdleCPUPercent is the agent's CPU during the FIFO run, when it
	// serves no one: its probes, signal sources and profiler alone. The
	// difference to CPUPercent is what serving the run cost.
	IdleCPUPercent float64 `json:"idle_cpu_percent"`
	// RSSMiB is the agent's resident set at the end of its run; RSSMiBMean
	// and RSSMiBMax are over the run, read every rssEvery (a Go agent's
	// resident set is a sawtooth, and the end lands anywhere on it);
	// PeakRSSMiB is the largest since the process started (VmHWM), its
	// start-up included.
	RSSMiB            float64 `json:"rss_mib"`
	RSSMiBMean        float64 `json:"rss_mib_mean"`
	RSSMiBMax         float64 `json:"rss_mib_max"`
	PeakRSSMiB        float64 `json:"peak_rss_mib"`
	Decisions         int     `json:"decisions"`
	DecideErrors      int     `json:"decide_errors"`
	ReportErrors      int     `json:"report_errors"`
	ExperienceRecords int     `json:"experience_records"`
	FlamegraphWindows int     `json:"flamegraph_windows"`
	ProbesAttached    int     `json:"probes_attached"`
	TimeScale         float64 `json:"time_scale"`
	LateStarts        int     `json:"late_starts"`
	// Decide is the mode (local or remote); LocalDecisions and
	// RemoteDecisions count the tasks decided from the agent's table and
	// by a call to it. decide_p50_us and decide_p99_us are over every
	// task's wait for its priority; the remote ones over the calls alone.
	Decide            string  `json:"decide"`
	AnswerOrder       string  `json:"answer_order"` // BenchConfig.AnswerOrder
	LocalDecisions    int     `json:"local_decisions"`
	RemoteDecisions   int     `json:"remote_decisions"`
	RemoteDecideP50Us float64 `json:"remote_decide_p50_us"`
	RemoteDecideP99Us float64 `json:"remote_decide_p99_us"`
	// HeldBackStarts is how many of the agent run's tasks started while
	// the agent asked for more than the calm background reserve (the work
	// ran slow, or, before that was known, its kernel said the CPUs were
	// contended; policy.Reserve).
	HeldBackStarts int `json:"held_back_starts"`
	// HeldBackStartsPerPeriod splits them by the period (train.Period,
	// the rows of the per-period table) their tasks arrived in, for a
	// scenario with interference.
	HeldBackStartsPerPeriod []int `json:"held_back_starts_per_period,omitempty"`
	// ShortStarts is how many background tasks started on a worker the
	// reserve held, as short work (beyond the calm quarter) or as urgent
	// work (Result.ShortStarts).
	ShortStarts int `json:"short_starts"`
	// ExpiredStarts is how many of the agent run's tasks started after
	// their deadline had passed (train.ExpiredStarts): work that met no
	// SLA and took a worker.
	ExpiredStarts int `json:"expired_starts"`
	// ServiceP50Ms is the agent run's median service time (ms of scenario
	// time, start to finish) per period (tasks by arrival) and class, in
	// the scenario's class order; 0 where none finished.
	ServiceP50Ms [][]float64 `json:"service_p50_ms,omitempty"`
}

// The modes of BenchConfig.Decide.
const (
	DecideLocal  = "local"
	DecideRemote = "remote"
)

// ErrDecideMode reports a --decide that is neither local nor remote.
var ErrDecideMode = errors.New("e2e: --decide must be local or remote")

// Bench runs a scenario's arrivals on real work: FIFO, then each
// in-process baseline, then with priorities from a triage agent over QUIC
// (with AgentFirst, the agent right after FIFO).
// The agent is a separate `triage agent` process (every probe and the
// flame-graph recorder on), so its CPU time and memory are its own and
// measurable; it is up for every run, so every run pays the same CPU for
// its probes.
func Bench(ctx context.Context, c BenchConfig) (*Report, error) {
	sc := c.Scenario
	if sc == nil {
		return nil, ErrNoScenario
	}
	switch c.Decide {
	case "":
		c.Decide = DecideLocal
	case DecideLocal, DecideRemote:
	default:
		return nil, fmt.Errorf("%w, not %q", ErrDecideMode, c.Decide)
	}
	rules, err := Baselines(c.Baseline, sc)
	if err != nil {
		return nil, err
	}
	onRun := func(r *Result) {
		if c.OnRun != nil {
			c.OnRun(r)
		}
	}
	// Refuse a node this machine cannot give before anything runs, and
	// measure the I/O unit every run shares.
	nd, err := newNode(sc, c.IODir, c.IOWriteMs)
	if err != nil {
		return nil, err
	}
	nd.close()
	dir := c.KeepDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "triage-e2e-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--keep-dir: %w", err)
	}
	agentCfg := agentproc.Config{
		Bin: c.AgentBin, Dir: dir, Model: c.Model, NoEBPF: c.NoEBPF,
		ExtraArgs: []string{"--workers", strconv.Itoa(sc.Workers)}, ErrorLog: os.Stderr,
		// In the environment, so that --agent-bin may name a binary from
		// before the flag.
		Env: []string{"TRIAGE_CPUS=" + strconv.Itoa(nd.cpuCount())},
	}
	ag, err := agentproc.Start(ctx, agentCfg)
	if err != nil {
		return nil, err
	}
	defer ag.Stop()
	base := Config{Scenario: sc, Seed: c.Seed, TimeScale: c.TimeScale, CPUTime: c.CPUTime, IODir: c.IODir, IOWriteMs: nd.writeMs}
	rep := &Report{}
	i0, _ := ag.Usage()
	f0 := time.Now()
	if rep.FIFO, err = Run(ctx, base); err != nil {
		return nil, fmt.Errorf("FIFO run: %w", err)
	}
	i1, _ := ag.Usage()
	idleCPU := cpuPercent(i0, i1, time.Since(f0))
	onRun(rep.FIFO)
	var agentRun agentRunStats
	playAgent := func() (err error) {
		if agentRun, err = runAgent(ctx, c, base, ag); err == nil {
			rep.Agent = agentRun.res
			onRun(agentRun.res)
		}
		return err
	}
	if c.AgentFirst {
		if err := playAgent(); err != nil {
			return nil, err
		}
	}
	for _, rule := range rules {
		cfg := base
		cfg.Rule = rule
		res, err := Run(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s run: %w", rule.Name(), err)
		}
		rep.Rules = append(rep.Rules, res)
		onRun(res)
	}
	if !c.AgentFirst {
		if err := playAgent(); err != nil {
			return nil, err
		}
	}
	res, wall, u0, u1, scraped := agentRun.res, agentRun.wall, agentRun.u0, agentRun.u1, agentRun.scraped
	ag.Stop()
	records := -1
	if st, err := experience.ReadDirWith(filepath.Join(dir, "experience"), experience.ReadOptions{}, nil); err == nil {
		records = st.Records
	}
	if c.AblateKernel {
		if rep.AgentAblated, err = runAblated(ctx, c, base, agentCfg); err != nil {
			return nil, err
		}
		onRun(rep.AgentAblated)
	}

	ev := &train.Evaluation{Scenario: sc.Name, Order: []string{"fifo"}, Policies: map[string]train.Metrics{"fifo": rep.FIFO.Metrics, "agent": res.Metrics}, Periods: sc.Periods()}
	for _, r := range rep.Rules {
		ev.Order = append(ev.Order, r.Label)
		ev.Policies[r.Label] = r.Metrics
	}
	ev.Order = append(ev.Order, "agent")
	if rep.AgentAblated != nil {
		ev.Order = append(ev.Order, rep.AgentAblated.Label)
		ev.Policies[rep.AgentAblated.Label] = rep.AgentAblated.Metrics
	}
	rep.Evaluation = ev
	rep.Stats = AgentStats{
		GoodputRatio: round3(rep.GoodputRatio()),
		DecideP50Us:  round3(float64(measure.Quantile(res.DecideLatency, 0.5).Nanoseconds()) / 1e3),
		DecideP99Us:  round3(float64(measure.Quantile(res.DecideLatency, 0.99).Nanoseconds()) / 1e3),
		CPUPercent:   cpuPercent(u0, u1, wall), IdleCPUPercent: idleCPU,
		RSSMiB:     round3(proc.MiB(u1.RSS)),
		RSSMiBMean: round3(proc.MiB(agentRun.rss.Mean)), RSSMiBMax: round3(proc.MiB(agentRun.rss.Max)),
		PeakRSSMiB: round3(proc.MiB(u1.PeakRSS)),
		Decisions:  len(res.DecideLatency), DecideErrors: res.DecideErrors, ReportErrors: res.ReportErrors,
		AgentSideMeanUs: round3(scraped.meanDecideUs), MeanBatch: round3(scraped.meanBatch),
		AgentSideP50Us: round3(scraped.p50DecideUs), AgentSideP99Us: round3(scraped.p99DecideUs),
		ExperienceRecords: records, FlamegraphWindows: scraped.fgWindows, ProbesAttached: scraped.probesAttached,
		TimeScale: res.TimeScale, LateStarts: rep.FIFO.LateStarts + res.LateStarts,
		Decide: c.Decide, AnswerOrder: c.AnswerOrder.String(), LocalDecisions: res.LocalDecisions, RemoteDecisions: res.RemoteDecisions,
		HeldBackStarts: res.HeldBackStarts, HeldBackStartsPerPeriod: heldPerPeriod(res.Metrics.PerPeriod), ShortStarts: res.ShortStarts,
		ExpiredStarts:     train.ExpiredStarts(res.Outcomes),
		ServiceP50Ms:      serviceP50(c.Scenario, res.Outcomes),
		RemoteDecideP50Us: round3(float64(measure.Quantile(res.RemoteLatency, 0.5).Nanoseconds()) / 1e3),
		RemoteDecideP99Us: round3(float64(measure.Quantile(res.RemoteLatency, 0.99).Nanoseconds()) / 1e3),
	}
	return rep, nil
}

// GoodputRatio is the agent run's goodput over FIFO's (0 when FIFO had none).
func (r *Report) GoodputRatio() float64 {
	if r.FIFO.Metrics.GoodputPerS > 0 {
		return r.Agent.Metrics.GoodputPerS / r.FIFO.Metrics.GoodputPerS
	}
	return 0
}

// JSON is the bench's JSON line: the evaluation as `triage eval --json`
// prints it, plus the "agent" object.
func (r *Report) JSON() ([]byte, error) {
	b, err := r.Evaluation.JSON()
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	obj["agent"] = r.Stats
	if len(r.Simulated) > 0 {
		obj["simulated"] = r.Simulated
	}
	return json.Marshal(obj)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// BaselineNames are the baselines that run inside the executor, in run
// order: every baseline of train.Baselines that decides from the task and
// its own measurements (slack-rule reads the simulator's queue, which the
// real executor does not expose, so it runs in the simulator only).
var BaselineNames = append([]string{"edf", "sjf", "static-class", "reserve-rule"}, train.ControllerNames...)

// Baselines parses --baseline: names separated by commas, "all", or ""
// / "none" for none. Each is a fresh instance.
func Baselines(spec string, sc *train.Scenario) ([]train.Policy, error) {
	if spec == "" || spec == "none" {
		return nil, nil
	}
	names := strings.Split(spec, ",")
	if spec == "all" {
		names = BaselineNames
	}
	var out []train.Policy
	for _, n := range names {
		p, err := baseline(strings.TrimSpace(n), sc)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func baseline(name string, sc *train.Scenario) (train.Policy, error) {
	switch name {
	case "edf":
		return train.EDF{}, nil
	case "sjf":
		return train.SJF{}, nil
	case "static-class":
		return train.NewStaticClass(sc), nil
	case "reserve-rule":
		return train.ReserveRule{}, nil
	}
	for _, p := range train.Controllers() {
		if p.Name() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("--baseline %q: want all, none, or some of %s", name, strings.Join(BaselineNames, ", "))
}

// agentRunStats is the agent run and what its process cost during it.
type agentRunStats struct {
	res     *Result
	wall    time.Duration
	u0, u1  proc.Usage
	rss     proc.RSSSummary // over the run, read every rssEvery
	scraped scrapedAgent
}

// rssEvery is how often the agent's resident set is read during its run:
// 50 readings over the default compressed run of 25 s.
const rssEvery = 500 * time.Millisecond

// The executor finds the client's reserve and table by interface
// conversion, which falls back to the calm quarter and to calls without a
// word where the client stops implementing them: checked here at compile
// time.
var (
	_ ReserveAgent = (*client.Client)(nil)
	_ LocalAgent   = (*client.Client)(nil)
)

// runAgent runs the arrivals with priorities from the agent process ag,
// through a client of its own, closed when the run ends.
func runAgent(ctx context.Context, c BenchConfig, base Config, ag *agentproc.Process) (agentRunStats, error) {
	local := c.Decide == DecideLocal
	cl, err := client.Dial(ctx, ag.QUICAddr, client.Config{PinSHA256: ag.Fingerprint, ServerName: "localhost", LocalDecisions: local})
	if err != nil {
		return agentRunStats{}, fmt.Errorf("dialing the agent: %w", err)
	}
	defer cl.Close()
	var st agentRunStats
	st.u0, _ = ag.Usage()
	rss := proc.SampleRSS(ag.PID, rssEvery)
	t0 := time.Now()
	acfg := base
	acfg.Agent, acfg.Local, acfg.DecideConcurrency, acfg.IDBase = cl, local, c.DecideConcurrency, uint64(time.Now().UnixNano())&^0xffffffff
	acfg.AnswerOrder = c.AnswerOrder
	st.res, err = Run(ctx, acfg)
	st.rss = rss.Stop()
	if err != nil {
		return agentRunStats{}, fmt.Errorf("agent run: %w", err)
	}
	st.wall = time.Since(t0)
	st.u1, _ = ag.Usage()
	st.scraped = readScrape(ag.Scrape())
	return st, nil
}

// runAblated is BenchConfig.AblateKernel's run: a second agent process,
// started as the first was but blind to the kernel, in a directory of its
// own, stopped when the run ends. The first is stopped by then, so the two
// never share the node, and its own figures (CPU, RSS, decisions) are the
// ones the report gives.
func runAblated(ctx context.Context, c BenchConfig, base Config, cfg agentproc.Config) (*Result, error) {
	cfg.Dir = filepath.Join(cfg.Dir, "ablated")
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("the ablated agent's directory: %w", err)
	}
	cfg.ExtraArgs = append(slices.Clone(cfg.ExtraArgs), "--ablate", "kernel")
	ag, err := agentproc.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the ablated agent: %w", err)
	}
	defer ag.Stop()
	base.Label = "agent-ablated"
	st, err := runAgent(ctx, c, base, ag)
	if err != nil {
		return nil, fmt.Errorf("the ablated agent: %w", err)
	}
	return st.res, nil
}

// cpuPercent is the CPU the process used between two readings, in percent
// of one core over wall.
func cpuPercent(u0, u1 proc.Usage, wall time.Duration) float64 {
	return round3(100 * (u1.CPU - u0.CPU).Seconds() / wall.Seconds())
}

// heldPerPeriod is the held-back starts of each period of counts, nil
// for a scenario of one period (no counts).
func heldPerPeriod(counts []train.PeriodCount) []int {
	if len(counts) == 0 {
		return nil
	}
	held := make([]int, len(counts))
	for k, c := range counts {
		held[k] = c.Held
	}
	return held
}
