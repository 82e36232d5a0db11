package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/bpf"
	benchsignals "github.com/triage-agent/triage/internal/bench/signals"
	"github.com/triage-agent/triage/policy"
)

func init() {
	register("signals", "print the live kernel signals, their sources and the state vector (like top)", runSignals)
}

// signalsFlags are the collector flags shared by `triage signals` and
// `triage bench signals`.
type signalsFlags struct {
	noBPF, syscallFeature                     *bool
	disable, tier, pids, cgroups, ports, wind *string
	acceptMax, runqSample                     *uint
}

func addSignalsFlags(fs interface {
	Bool(string, bool, string) *bool
	String(string, string, string) *string
	Uint(string, uint, string) *uint
}) *signalsFlags {
	return &signalsFlags{
		noBPF:          fs.Bool("no-bpf", false, "read every signal from procfs (no eBPF)"),
		disable:        fs.String("disable", "", "comma-separated probes to leave out: runqlat,accept,blkio,syscalls,tcpstat"),
		tier:           fs.String("tier", "auto", "attach tier of the tracepoint probes: auto|tp_btf|raw_tp|tracepoint"),
		pids:           fs.String("watch-pid", "", "comma-separated pids: syscall latency filter, schedstat fallback"),
		cgroups:        fs.String("watch-cgroup", "", "comma-separated cgroup v2 directories: run-queue and syscall latency"),
		ports:          fs.String("watch-port", "", "comma-separated listening ports for the accept queue (default: all)"),
		wind:           fs.String("window", "1s", "percentile and rate window"),
		acceptMax:      fs.Uint("accept-max-backlog", 0, "procfs fallback: listen backlog to divide by (0: net.core.somaxconn)"),
		runqSample:     fs.Uint("runq-sample", 1, "time one run-queue enqueue in N per CPU (power of two): lower cost per context switch, fewer samples"),
		syscallFeature: fs.Bool("syscall-feature", false, "feature 11 is the watched syscall p99 instead of the TCP retransmit fraction"),
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (f *signalsFlags) config() (signals.Config, error) {
	var cfg signals.Config
	cfg.DisableBPF = *f.noBPF
	cfg.Disable = splitList(*f.disable)
	t, err := bpf.ParseTier(*f.tier)
	if err != nil {
		return cfg, err
	}
	cfg.Tier = t
	if cfg.Window, err = time.ParseDuration(*f.wind); err != nil || cfg.Window <= 0 {
		return cfg, fmt.Errorf("--window %q: want a positive duration", *f.wind)
	}
	for _, p := range splitList(*f.pids) {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return cfg, fmt.Errorf("--watch-pid %q: not a pid", p)
		}
		cfg.WatchPIDs = append(cfg.WatchPIDs, n)
	}
	cfg.WatchCgroups = splitList(*f.cgroups)
	for _, p := range splitList(*f.ports) {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return cfg, fmt.Errorf("--watch-port %q: not a port", p)
		}
		cfg.WatchPorts = append(cfg.WatchPorts, uint16(n))
	}
	if *f.acceptMax > 1<<31 {
		return cfg, fmt.Errorf("--accept-max-backlog %d: too large", *f.acceptMax)
	}
	cfg.AcceptMaxBacklog = uint32(*f.acceptMax)
	if n := *f.runqSample; n == 0 || n > 1<<20 || n&(n-1) != 0 {
		return cfg, fmt.Errorf("--runq-sample %d: want a power of two", n)
	}
	cfg.RunqSampleEvery = uint32(*f.runqSample)
	return cfg, nil
}

func runSignals(args []string) error {
	fs := newFlagSet("signals", "print the node's kernel signals, their sources, probe status and the node's state vector once a second")
	sf := addSignalsFlags(fs)
	once := fs.Bool("once", false, "print one sample and exit")
	asJSON := fs.Bool("json", false, "print JSON objects (one per line) instead of the table")
	interval := fs.Duration("interval", time.Second, "time between printed samples")
	count := fs.Int("count", 0, "exit after this many samples (0: until interrupted)")
	footprint := fs.Duration("footprint", 0, "run silently this long, then print the process's own RSS and CPU as JSON (used by triage bench signals)")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	if *interval <= 0 {
		return fmt.Errorf("--interval %v: want a positive duration", *interval)
	}
	if *footprint > 0 {
		return benchsignals.MeasureFootprint(cfg, *footprint, os.Stdout)
	}
	col, err := signals.New(cfg)
	if err != nil {
		return err
	}
	defer col.Close()
	asm := state.NewAssembler(state.Config{SyscallFeature: *sf.syscallFeature})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Two samples one window apart, so the first values printed cover a
	// full window rather than the instant since the probes attached.
	select {
	case <-time.After(col.Config().Window):
	case <-ctx.Done():
		return nil
	}
	col.Sample()
	var snap signals.Snapshot
	out := signalsOut
	live := !*asJSON && !*once && out == io.Writer(os.Stdout) && isTerminal(os.Stdout)
	for n := 1; ; n++ {
		col.Snapshot(&snap)
		// No agent here: no tasks in flight to count, so feature 0 is neutral.
		feats := asm.Features(&snap, -1, time.Now())
		if *asJSON {
			if err := json.NewEncoder(out).Encode(signalsJSON(&snap, &feats)); err != nil {
				return err
			}
		} else {
			if live {
				fmt.Fprint(out, "\x1b[H\x1b[2J")
			}
			printSignalsTable(out, &snap, &feats)
		}
		if *once || (*count > 0 && n >= *count) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*interval):
		}
	}
}

// signalsOut is where `triage signals` prints (tests capture it).
var signalsOut io.Writer = os.Stdout

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// signalsJSON is the --json object: features by name with their sources,
// the sources of each signal, and every signal's values.
func signalsJSON(s *signals.Snapshot, f *state.Features) map[string]any {
	feats := map[string]float32{}
	sources := map[string]state.Source{}
	for i, n := range policy.FeatureNames {
		feats[n], sources[n] = f[i].Value, f[i].Source
	}
	return map[string]any{
		"schema":   policy.StateSchema,
		"time":     s.Time,
		"features": feats,
		"vector":   f.Vector(),
		"sources": map[string]signals.SourceKind{
			"runq": s.RunQueue.Source.Kind, "accept": s.Accept.Source.Kind, "blkio": s.Blkio.Source.Kind,
			"syscall": s.Syscall.Source.Kind, "tcp": s.TCP.Source.Kind, "cpu": s.CPU.Source.Kind,
		},
		"source_reasons": map[string]string{
			"runq": s.RunQueue.Source.Reason, "accept": s.Accept.Source.Reason, "blkio": s.Blkio.Source.Reason,
			"syscall": s.Syscall.Source.Reason, "tcp": s.TCP.Source.Reason, "cpu": s.CPU.Source.Reason,
		},
		"feature_sources":     sources,
		"runq_latency_us":     s.RunQueue.Latency,
		"runq_pressure":       s.RunQueue.Pressure,
		"runq_cgroups":        s.RunQueue.Cgroups,
		"blkio_latency_us":    s.Blkio.Latency,
		"blkio_devices":       s.Blkio.Devices,
		"syscall_latency_us":  s.Syscall.Latency,
		"accept":              s.Accept,
		"tcp":                 s.TCP,
		"cpu":                 s.CPU,
		"probes":              s.Probes,
		"window_end_unixnano": s.Time.UnixNano(),
	}
}

func fmtNum(n signals.Num) string {
	if !n.Known() {
		return "-"
	}
	return strconv.FormatFloat(float64(n), 'f', 1, 64)
}

func printSignalsTable(w io.Writer, s *signals.Snapshot, f *state.Features) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "triage signals  %s\n\n", s.Time.Format(time.TimeOnly))
	fmt.Fprintln(tw, "SIGNAL\tSOURCE\tP50\tP99\tVALUE\tNOTE")
	lat := func(name string, src signals.Source, l signals.Latency, note string) {
		fmt.Fprintf(tw, "%s\t%s\t%s µs\t%s µs\t%d samples\t%s\n", name, src.Kind, fmtNum(l.P50Us), fmtNum(l.P99Us), l.Count, note)
	}
	lat("run queue", s.RunQueue.Source, s.RunQueue.Latency, "psi some avg10 "+fmtNum(s.RunQueue.Pressure*100)+"%")
	for _, c := range s.RunQueue.Cgroups {
		lat("  cgroup", s.RunQueue.Source, c.Latency, c.Path)
	}
	lat("block I/O", s.Blkio.Source, s.Blkio.Latency, "")
	for _, d := range s.Blkio.Devices {
		lat("  "+d.Name, s.Blkio.Source, d.Latency, d.Dev)
	}
	lat("syscalls", s.Syscall.Source, s.Syscall.Latency, fmt.Sprintf("%d watched", s.Syscall.Watched))
	fmt.Fprintf(tw, "accept queue\t%s\t\t\tfill %s\t%d listeners\n", s.Accept.Source.Kind, fmtNum(s.Accept.Fill), len(s.Accept.Listeners))
	fmt.Fprintf(tw, "tcp\t%s\t\t\tretrans %s%%\t%d retrans / %d segs, %d state changes\n", s.TCP.Source.Kind,
		fmtNum(s.TCP.RetransFraction*100), s.TCP.Retransmits, s.TCP.OutSegs, s.TCP.StateChanges)
	fmt.Fprintf(tw, "cpu\t%s\t\t\tutil %s%%\t\n", s.CPU.Source.Kind, fmtNum(s.CPU.Util*100))
	fmt.Fprintln(tw, "\nPROBE\tATTACHED\tTIER\tREASON")
	for _, p := range s.Probes {
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\n", p.Name, p.Attached, p.Tier, truncate(p.Reason, 100))
	}
	fmt.Fprintf(tw, "\nFEATURE (%s)\tVALUE\tSOURCE\t\n", policy.StateSchema)
	for i, n := range policy.FeatureNames {
		fmt.Fprintf(tw, "%2d %s\t%.3f\t%s\t\n", i, n, f[i].Value, f[i].Source)
	}
	tw.Flush()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
