package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/e2e"
	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/train"
)

func init() { registerBench("e2e", runBenchE2E) }

// runBenchE2E runs a scenario's arrivals twice on real CPU work: FIFO, then
// with priorities from a triage agent over QUIC. The agent is a separate
// `triage agent` process (every probe and the flame-graph recorder on), so
// its CPU time and memory are its own and measurable; FIFO runs before the
// agent starts, so the baseline does not pay for the agent's probes.
func runBenchE2E(args []string) error {
	fs := newFlagSet("bench e2e", "Replay a scenario on real CPU work under FIFO and under the agent's priorities; print the metrics of `triage eval` (and with --json its JSON shape as the last line, plus an \"agent\" object).")
	scenario := fs.String("scenario", "", "scenario file (required)")
	asJSON := fs.Bool("json", false, "end with one JSON object")
	scale := fs.Float64("scale", 0, "wall seconds per scenario second (0: min(1, 25/duration), a run under half a minute)")
	seed := fs.Int64("seed", 0, "arrival seed (0: the scenario's)")
	model := fs.String("model", "", "model for the agent (\"\": its embedded default)")
	agentBin := fs.String("agent-bin", "", "triage binary to run the agent with (\"\": this one)")
	concurrency := fs.Int("concurrency", 32, "decide calls in flight at once")
	noEBPF := fs.Bool("no-ebpf", false, "run the agent without eBPF (procfs signals, no profiler)")
	cpuTime := fs.Bool("cpu-time", false, "count a task's cost as its worker's CPU time instead of wall time (oversubscribed machines then serve slower)")
	baseline := fs.String("baseline", "reserve-rule", "hand-written rule to run on the same real workers, between FIFO and the agent: reserve-rule, static-class or none")
	keep := fs.String("keep-dir", "", "keep the agent's experience log and flame graphs here (\"\": a temporary directory, removed)")
	addConfigFlag(fs)
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	if *scenario == "" {
		return errors.New("--scenario is required")
	}
	sc, err := train.LoadScenario(*scenario)
	if err != nil {
		return err
	}
	ctx := context.Background()

	fifo, err := e2e.Run(ctx, e2e.Config{Scenario: sc, Seed: *seed, TimeScale: *scale, CPUTime: *cpuTime})
	if err != nil {
		return fmt.Errorf("FIFO run: %w", err)
	}
	fmt.Println(fifo)
	var rule *e2e.Result
	if *baseline != "" && *baseline != "none" {
		p, err := e2eBaseline(*baseline, sc)
		if err != nil {
			return err
		}
		if rule, err = e2e.Run(ctx, e2e.Config{Scenario: sc, Seed: *seed, TimeScale: *scale, CPUTime: *cpuTime, Rule: p}); err != nil {
			return fmt.Errorf("%s run: %w", *baseline, err)
		}
		fmt.Println(rule)
	}

	dir := *keep
	if dir == "" {
		if dir, err = os.MkdirTemp("", "triage-e2e-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--keep-dir: %w", err)
	}
	ag, err := startAgentProcess(ctx, agentProcessConfig{
		bin: *agentBin, dir: dir, model: *model, noEBPF: *noEBPF, queueCap: 64 * sc.Workers,
	})
	if err != nil {
		return err
	}
	defer ag.stop()
	cl, err := client.Dial(ctx, ag.quicAddr, client.Config{PinSHA256: ag.fingerprint, ServerName: "localhost"})
	if err != nil {
		return fmt.Errorf("dialing the agent: %w", err)
	}
	defer cl.Close()

	cpu0, _ := procCPU(ag.pid)
	t0 := time.Now()
	res, err := e2e.Run(ctx, e2e.Config{Scenario: sc, Seed: *seed, TimeScale: *scale, CPUTime: *cpuTime, Agent: cl, DecideConcurrency: *concurrency, IDBase: uint64(time.Now().UnixNano()) &^ 0xffffffff})
	if err != nil {
		return fmt.Errorf("agent run: %w", err)
	}
	wall := time.Since(t0)
	cpu1, _ := procCPU(ag.pid)
	rss, hwm := procRSS(ag.pid)
	fmt.Println(res)
	scraped := scrapeAgent(ag.adminAddr)
	cl.Close()
	ag.stop()
	records := -1
	if st, err := experience.ReadDirWith(filepath.Join(dir, "experience"), experience.ReadOptions{}, nil); err == nil {
		records = st.Records
	}

	ev := &train.Evaluation{Scenario: sc.Name, Order: []string{"fifo"}, Policies: map[string]train.Metrics{"fifo": fifo.Metrics, "agent": res.Metrics}}
	if rule != nil {
		ev.Order = append(ev.Order, rule.Label)
		ev.Policies[rule.Label] = rule.Metrics
	}
	ev.Order = append(ev.Order, "agent")
	fmt.Println()
	if err := ev.WriteMarkdown(os.Stdout); err != nil {
		return err
	}
	fmt.Println()
	writeClassLevels(os.Stdout, sc, res)
	ratio := 0.0
	if fifo.Metrics.GoodputPerS > 0 {
		ratio = res.Metrics.GoodputPerS / fifo.Metrics.GoodputPerS
	}
	stats := e2eAgentStats{
		GoodputRatio: round3(ratio),
		DecideP50Us:  round3(float64(e2e.Quantile(res.DecideLatency, 0.5).Nanoseconds()) / 1e3),
		DecideP99Us:  round3(float64(e2e.Quantile(res.DecideLatency, 0.99).Nanoseconds()) / 1e3),
		CPUPercent:   round3(100 * (cpu1 - cpu0).Seconds() / wall.Seconds()),
		RSSMiB:       round3(float64(rss) / (1 << 20)),
		PeakRSSMiB:   round3(float64(hwm) / (1 << 20)),
		Decisions:    len(res.DecideLatency), DecideErrors: res.DecideErrors, ReportErrors: res.ReportErrors,
		AgentSideMeanUs: round3(scraped.meanDecideUs), MeanBatch: round3(scraped.meanBatch),
		AgentSideP50Us: round3(scraped.p50DecideUs), AgentSideP99Us: round3(scraped.p99DecideUs),
		ExperienceRecords: records, FlamegraphWindows: scraped.fgWindows, ProbesAttached: scraped.probesAttached,
		TimeScale: res.TimeScale, LateStarts: fifo.LateStarts + res.LateStarts,
	}
	fmt.Printf("\nagent goodput %.2fx FIFO's; SLA attainment %.4f vs %.4f\n", ratio, res.Metrics.SLAAttainment, fifo.Metrics.SLAAttainment)
	fmt.Printf("decision round trip over QUIC (request out, answer in): p50 %.0f µs, p99 %.0f µs over %d decisions (%d errors); in the agent (request in, answer out): p50 %.0f µs, p99 %.0f µs, mean %.0f µs, mean batch %.1f tasks\n",
		stats.DecideP50Us, stats.DecideP99Us, stats.Decisions, stats.DecideErrors, stats.AgentSideP50Us, stats.AgentSideP99Us, stats.AgentSideMeanUs, stats.MeanBatch)
	fmt.Printf("agent process: CPU %.1f%% of one core, RSS %.1f MiB (peak %.1f MiB), %d probes attached, %d flame-graph windows, %d experience records\n",
		stats.CPUPercent, stats.RSSMiB, stats.PeakRSSMiB, stats.ProbesAttached, stats.FlamegraphWindows, stats.ExperienceRecords)
	if *asJSON {
		b, err := ev.JSON()
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
		obj["agent"] = stats
		line, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		fmt.Println(string(line))
	}
	return nil
}

// e2eAgentStats is the "agent" object of the JSON line.
type e2eAgentStats struct {
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

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

type agentProcessConfig struct {
	bin, dir, model string
	noEBPF          bool
	queueCap        int
}

type agentProcess struct {
	cmd                              *exec.Cmd
	pid                              int
	quicAddr, adminAddr, fingerprint string
	stopped                          bool
}

var servingLine = regexp.MustCompile(`msg="triage agent serving" quic=(\S+) admin=(\S+) .*fingerprint=([0-9a-f]{64})`)

// startAgentProcess runs `triage agent` on loopback ports chosen by the
// kernel, with a certificate written here so the client can pin it, and
// waits for /readyz.
func startAgentProcess(ctx context.Context, c agentProcessConfig) (*agentProcess, error) {
	bin := c.bin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the triage binary: %w", err)
		}
	}
	certFile, keyFile := filepath.Join(c.dir, "cert.pem"), filepath.Join(c.dir, "key.pem")
	if err := writeSelfSigned(certFile, keyFile); err != nil {
		return nil, err
	}
	args := []string{"agent", "--quic-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
		"--tls-cert", certFile, "--tls-key", keyFile,
		"--experience-dir", filepath.Join(c.dir, "experience"), "--flamegraph-dir", filepath.Join(c.dir, "flamegraphs"),
		"--flamegraph-interval", "10s", "--queue-cap", strconv.Itoa(c.queueCap)}
	if c.model != "" {
		args = append(args, "--model", c.model)
	}
	if c.noEBPF {
		args = append(args, "--no-ebpf")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// Flags win over the environment: a TRIAGE_* of the caller's shell
	// cannot move the bench's agent off loopback.
	cmd.Env = os.Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s agent: %w", bin, err)
	}
	ap := &agentProcess{cmd: cmd, pid: cmd.Process.Pid}
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if m := servingLine.FindStringSubmatch(line); m != nil && !sent {
				found <- m
				sent = true
			}
			if strings.Contains(line, "level=ERROR") {
				fmt.Fprintln(os.Stderr, "agent:", line)
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case m, ok := <-found:
		if !ok {
			cmd.Wait()
			return nil, errors.New("the agent exited before serving (run `triage agent` to see why)")
		}
		ap.quicAddr, ap.adminAddr, ap.fingerprint = m[1], m[2], m[3]
	case <-time.After(60 * time.Second):
		ap.stop()
		return nil, errors.New("the agent did not start serving within 60 s")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + ap.adminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return ap, nil
			}
		}
		if time.Now().After(deadline) {
			ap.stop()
			return nil, errors.New("the agent was not ready within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (ap *agentProcess) stop() {
	if ap.stopped {
		return
	}
	ap.stopped = true
	ap.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { ap.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		ap.cmd.Process.Kill()
		<-done
	}
}

func writeSelfSigned(certFile, keyFile string) error {
	cert, err := serve.SelfSigned("localhost", "127.0.0.1")
	if err != nil {
		return fmt.Errorf("making a certificate: %w", err)
	}
	key, ok := cert.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return fmt.Errorf("self-signed key is a %T, want ECDSA", cert.PrivateKey)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// procCPU is a process's user+system CPU time, from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz, nil
}

// procRSS is the resident set and its peak, in bytes, from /proc/PID/status.
func procRSS(pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

type scrapedAgent struct {
	meanDecideUs, meanBatch   float64
	p50DecideUs, p99DecideUs  float64
	fgWindows, probesAttached int
}

// scrapeAgent reads a few numbers from the agent's /metrics.
func scrapeAgent(admin string) scrapedAgent {
	var s scrapedAgent
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	vals := map[string]float64{}
	var buckets []bucket
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		if le, ok := strings.CutPrefix(name, `triage_decide_latency_seconds_bucket{le="`); ok {
			bound, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64)
			if err == nil {
				buckets = append(buckets, bucket{bound, x})
			}
			continue
		}
		if strings.HasPrefix(name, "triage_probe_attached{") {
			if x == 1 {
				s.probesAttached++
			}
			continue
		}
		vals[name] = x
	}
	if n := vals["triage_decide_latency_seconds_count"]; n > 0 {
		s.meanDecideUs = vals["triage_decide_latency_seconds_sum"] / n * 1e6
	}
	if n := vals["triage_decide_batch_tasks_count"]; n > 0 {
		s.meanBatch = vals["triage_decide_batch_tasks_sum"] / n
	}
	s.fgWindows = int(vals["triage_flamegraph_windows"])
	s.p50DecideUs = histQuantile(buckets, 0.5) * 1e6
	s.p99DecideUs = histQuantile(buckets, 0.99) * 1e6
	return s
}

type bucket struct{ le, count float64 }

// histQuantile estimates a quantile from cumulative Prometheus buckets,
// interpolating linearly within the bucket (as histogram_quantile does).
func histQuantile(bs []bucket, q float64) float64 {
	if len(bs) == 0 {
		return 0
	}
	total := bs[len(bs)-1].count
	if total == 0 {
		return 0
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for _, b := range bs {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe
			}
			if b.count == prevCount {
				return b.le
			}
			return prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount)
		}
		prevLe, prevCount = b.le, b.count
	}
	return prevLe
}

// writeClassLevels prints, per class, the agent run's SLA attainment (its
// Metrics.PerClass) and how many of the class's tasks got each priority:
// where real execution parts from the simulator, this says whether the
// decisions or the execution moved.
func writeClassLevels(w io.Writer, sc *train.Scenario, res *e2e.Result) {
	type row struct {
		n      int
		levels [policy.NumActions]int
	}
	rows := make([]row, len(sc.Classes))
	for i := range res.Outcomes {
		o := &res.Outcomes[i]
		rows[o.Class].n++
		rows[o.Class].levels[o.Level]++
	}
	fmt.Fprintln(w, "| class | tasks | SLA attainment | priority 0 / 1 / 2 / 3 / 4 |")
	fmt.Fprintln(w, "| --- | ---: | ---: | --- |")
	for c, r := range rows {
		name := sc.Classes[c].Name
		fmt.Fprintf(w, "| %s | %d | %.4f | %d / %d / %d / %d / %d |\n", name, r.n, res.Metrics.PerClass[name], r.levels[0], r.levels[1], r.levels[2], r.levels[3], r.levels[4])
	}
}

// e2eBaseline is a baseline that decides from the task alone, as the e2e
// executor's Rule must.
func e2eBaseline(name string, sc *train.Scenario) (train.Policy, error) {
	switch name {
	case "reserve-rule":
		return train.ReserveRule{}, nil
	case "static-class":
		return train.NewStaticClass(sc), nil
	}
	return nil, fmt.Errorf("--baseline %q: want reserve-rule, static-class or none", name)
}
