package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
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
	// Baseline is the hand-written rule run on the same real workers
	// between FIFO and the agent: reserve-rule or static-class; "" or
	// "none" runs none.
	Baseline          string
	AgentBin          string // the triage binary to run the agent with; "": this one
	Model             string // the agent's model; "": its embedded default
	NoEBPF            bool   // run the agent on procfs signals, without the profiler
	DecideConcurrency int    // decide calls in flight; default 32
	// KeepDir keeps the agent's experience log and flame graphs; "": a
	// temporary directory, removed.
	KeepDir string
	// OnRun, when set, receives each run as it finishes: FIFO, the rule,
	// the agent.
	OnRun func(*Result)
}

// Report is the whole bench: the runs, their evaluation table and what
// the agent process cost.
type Report struct {
	FIFO, Rule, Agent *Result // Rule is nil when no baseline ran
	Evaluation        *train.Evaluation
	Stats             AgentStats
}

// AgentStats is the "agent" object of the JSON line.
type AgentStats struct {
	GoodputRatio      float64 `json:"goodput_ratio_vs_fifo"`
	DecideP50Us       float64 `json:"decide_p50_us"`
	DecideP99Us       float64 `json:"decide_p99_us"`
	AgentSideMeanUs   float64 `json:"agent_side_mean_us"`
	AgentSideP50Us    float64 `json:"agent_side_p50_us"`
	AgentSideP99Us    float64 `json:"agent_side_p99_us"`
	MeanBatch         float64 `json:"mean_batch_tasks"`
	CPUPercent        float64 `json:"cpu_percent"`
	RSSMiB            float64 `json:"rss_mib"`
	PeakRSSMiB        float64 `json:"peak_rss_mib"`
	Decisions         int     `json:"decisions"`
	DecideErrors      int     `json:"decide_errors"`
	ReportErrors      int     `json:"report_errors"`
	ExperienceRecords int     `json:"experience_records"`
	FlamegraphWindows int     `json:"flamegraph_windows"`
	ProbesAttached    int     `json:"probes_attached"`
	TimeScale         float64 `json:"time_scale"`
	LateStarts        int     `json:"late_starts"`
}

// Bench runs a scenario's arrivals on real CPU work: FIFO, then the
// baseline rule, then with priorities from a triage agent over QUIC. The
// agent is a separate `triage agent` process (every probe and the
// flame-graph recorder on), so its CPU time and memory are its own and
// measurable; FIFO and the rule run before the agent starts, so they do
// not pay for the agent's probes.
func Bench(ctx context.Context, c BenchConfig) (*Report, error) {
	sc := c.Scenario
	if sc == nil {
		return nil, ErrNoScenario
	}
	var rule train.Policy
	if c.Baseline != "" && c.Baseline != "none" {
		var err error
		if rule, err = Baseline(c.Baseline, sc); err != nil {
			return nil, err
		}
	}
	onRun := func(r *Result) {
		if c.OnRun != nil {
			c.OnRun(r)
		}
	}
	rep := &Report{}
	var err error
	if rep.FIFO, err = Run(ctx, Config{Scenario: sc, Seed: c.Seed, TimeScale: c.TimeScale, CPUTime: c.CPUTime}); err != nil {
		return nil, fmt.Errorf("FIFO run: %w", err)
	}
	onRun(rep.FIFO)
	if rule != nil {
		if rep.Rule, err = Run(ctx, Config{Scenario: sc, Seed: c.Seed, TimeScale: c.TimeScale, CPUTime: c.CPUTime, Rule: rule}); err != nil {
			return nil, fmt.Errorf("%s run: %w", c.Baseline, err)
		}
		onRun(rep.Rule)
	}

	dir := c.KeepDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "triage-e2e-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--keep-dir: %w", err)
	}
	ag, err := startAgentProcess(ctx, agentProcessConfig{
		bin: c.AgentBin, dir: dir, model: c.Model, noEBPF: c.NoEBPF, queueCap: 64 * sc.Workers,
	})
	if err != nil {
		return nil, err
	}
	defer ag.stop()
	cl, err := client.Dial(ctx, ag.quicAddr, client.Config{PinSHA256: ag.fingerprint, ServerName: "localhost"})
	if err != nil {
		return nil, fmt.Errorf("dialing the agent: %w", err)
	}
	defer cl.Close()

	u0, _ := proc.ReadUsage(ag.pid)
	t0 := time.Now()
	res, err := Run(ctx, Config{Scenario: sc, Seed: c.Seed, TimeScale: c.TimeScale, CPUTime: c.CPUTime, Agent: cl, DecideConcurrency: c.DecideConcurrency, IDBase: uint64(time.Now().UnixNano()) &^ 0xffffffff})
	if err != nil {
		return nil, fmt.Errorf("agent run: %w", err)
	}
	wall := time.Since(t0)
	u1, _ := proc.ReadUsage(ag.pid)
	rep.Agent = res
	onRun(res)
	scraped := scrapeAgent(ag.adminAddr)
	cl.Close()
	ag.stop()
	records := -1
	if st, err := experience.ReadDirWith(filepath.Join(dir, "experience"), experience.ReadOptions{}, nil); err == nil {
		records = st.Records
	}

	ev := &train.Evaluation{Scenario: sc.Name, Order: []string{"fifo"}, Policies: map[string]train.Metrics{"fifo": rep.FIFO.Metrics, "agent": res.Metrics}}
	if rep.Rule != nil {
		ev.Order = append(ev.Order, rep.Rule.Label)
		ev.Policies[rep.Rule.Label] = rep.Rule.Metrics
	}
	ev.Order = append(ev.Order, "agent")
	rep.Evaluation = ev
	rep.Stats = AgentStats{
		GoodputRatio: round3(rep.GoodputRatio()),
		DecideP50Us:  round3(float64(measure.Quantile(res.DecideLatency, 0.5).Nanoseconds()) / 1e3),
		DecideP99Us:  round3(float64(measure.Quantile(res.DecideLatency, 0.99).Nanoseconds()) / 1e3),
		CPUPercent:   round3(100 * (u1.CPU - u0.CPU).Seconds() / wall.Seconds()),
		RSSMiB:       round3(proc.MiB(u1.RSS)),
		PeakRSSMiB:   round3(proc.MiB(u1.PeakRSS)),
		Decisions:    len(res.DecideLatency), DecideErrors: res.DecideErrors, ReportErrors: res.ReportErrors,
		AgentSideMeanUs: round3(scraped.meanDecideUs), MeanBatch: round3(scraped.meanBatch),
		AgentSideP50Us: round3(scraped.p50DecideUs), AgentSideP99Us: round3(scraped.p99DecideUs),
		ExperienceRecords: records, FlamegraphWindows: scraped.fgWindows, ProbesAttached: scraped.probesAttached,
		TimeScale: res.TimeScale, LateStarts: rep.FIFO.LateStarts + res.LateStarts,
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
	return json.Marshal(obj)
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// Baseline is a hand-written rule that decides from the task alone, as the
// executor's Rule must.
func Baseline(name string, sc *train.Scenario) (train.Policy, error) {
	switch name {
	case "reserve-rule":
		return train.ReserveRule{}, nil
	case "static-class":
		return train.NewStaticClass(sc), nil
	}
	return nil, fmt.Errorf("--baseline %q: want reserve-rule, static-class or none", name)
}
