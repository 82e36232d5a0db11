package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/flamegraph"
	"github.com/triage-agent/triage/policy/control"
	"github.com/triage-agent/triage/policy/guard"
	"github.com/triage-agent/triage/wire"
)

func init() {
	register("agent", "run the node agent (QUIC endpoint, admin HTTP, experience log, flame graphs)", runAgent)
}

// agentFlags binds every `triage agent` flag to an agent.Config.
func agentFlags(cfg *agent.Config) (*flag.FlagSet, func() error) {
	fs := newFlagSet("agent", "Run the triage node agent. With no flags it serves QUIC (UDP) and gRPC and JSON (TCP) on 127.0.0.1:4433 (add --token, --token-file, --client-ca or --insecure-listen-any to listen beyond loopback), admin HTTP on :9090, the embedded model, every probe this kernel supports.")
	var tokens, expSeg, expTotal, tcpAddr, sans, nodeIP, podIP, goMem, mmapThreshold string
	var expSync time.Duration
	var fgMax int64
	var logLevel, logFormat string
	var minAgreement float64
	var guardRange bool
	var keepUrgent, minAdvantage float64
	var mallocArenas int
	var ablate string
	fs.StringVar(&cfg.QUICAddr, "quic-addr", "", `UDP address of the QUIC endpoint ("" = 127.0.0.1:4433, or :4433 with client authentication)`)
	fs.StringVar(&tcpAddr, "tcp-addr", tcpAddrAuto, `TCP address of gRPC and JSON over HTTP/1.1 and HTTP/2 ("`+tcpAddrAuto+`" = the --quic-addr host and port number; "" = no TCP listener)`)
	fs.StringVar(&cfg.AdminAddr, "admin-addr", agent.DefaultAdminAddr, "TCP address of the admin HTTP server (/metrics /healthz /readyz /flamegraphs)")
	fs.BoolVar(&cfg.AdminTLS, "admin-tls", false, "serve the admin port over TLS with the endpoint's certificate (a client certificate of --client-ca then counts as a credential)")
	fs.BoolVar(&cfg.AdminAuthAll, "admin-auth-all", false, "require the token (or a loopback peer, without one) on /metrics, /healthz and /readyz too")
	fs.StringVar(&cfg.ModelPath, "model", "", "ONNX model to serve, watched for hot reload (\"\" = the embedded default model)")
	fs.DurationVar(&cfg.ModelWatchInterval, "model-watch-interval", time.Second, "how often --model is checked for a new file")
	fs.StringVar(&cfg.ShadowModelPath, "shadow-model", "", "candidate ONNX model run in shadow on every request (never served); promote with POST /admin/promote")
	fs.StringVar(&cfg.Device, "device", "auto", "execution device: auto (CUDA if usable, else CPU), cpu or cuda")
	fs.StringVar(&cfg.ORTLibrary, "onnxruntime-lib", "", "path of libonnxruntime.so (\"\" = $TRIAGE_ONNXRUNTIME_LIB, the cache of scripts/fetch-onnxruntime.sh, the loader path)")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert", "", "PEM server certificate (\"\" = self-signed, fingerprint in the log)")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&cfg.ClientCAFile, "client-ca", "", "PEM CA that client certificates must be signed by (mutual TLS)")
	fs.StringVar(&tokens, "token", "", "bearer token(s) clients and the admin port require, comma-separated (at least 16 characters each); visible in /proc: prefer --token-file")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "file of bearer tokens, one per line, re-read when it changes (a mounted Secret)")
	fs.StringVar(&nodeIP, "node-ip", "", "the node's address, added to the self-signed certificate's names (the DaemonSet sets TRIAGE_NODE_IP from status.hostIP)")
	fs.StringVar(&podIP, "pod-ip", "", "the pod's address, added to the self-signed certificate's names (the DaemonSet sets TRIAGE_POD_IP from status.podIP)")
	fs.StringVar(&sans, "tls-san", "", "more names or addresses for the self-signed certificate, comma-separated")
	fs.BoolVar(&cfg.InsecureListenAny, "insecure-listen-any", false, "allow a non-loopback --quic-addr without client authentication")
	limits := connLimitFlags(fs, cfg)
	fs.StringVar(&cfg.ExperienceDir, "experience-dir", "", `experience log directory ("" = `+agent.DefaultStateDir+`/experience when writable, "-" = off)`)
	fs.StringVar(&expSeg, "experience-segment-bytes", "16MiB", "rotate experience segments at this size")
	fs.StringVar(&expTotal, "experience-max-bytes", "256MiB", "cap on the experience directory; the oldest segment goes first")
	fs.DurationVar(&expSync, "experience-sync-interval", time.Second, "fsync the experience log this often")
	fs.StringVar(&cfg.FlamegraphDir, "flamegraph-dir", "", `flame-graph windows directory ("" = `+agent.DefaultStateDir+`/flamegraphs when writable, "-" = off)`)
	fs.DurationVar(&cfg.FlamegraphInterval, "flamegraph-interval", agent.DefaultFGInterval, "length of one flame-graph window")
	fs.Int64Var(&fgMax, "flamegraph-max-bytes", 256<<20, "cap on the flame-graph directory")
	fs.StringVar(&cfg.FlamegraphUnwind, "flamegraph-unwind", "auto", "how user stacks are walked: auto (stack copies unwound by .eh_frame where the kernel allows, else frame pointers), dwarf, fp")
	fs.IntVar(&cfg.FlamegraphCacheBytes, "flamegraph-cache-bytes", flamegraph.DefaultMaxCacheBytes, "cap on the symboliser's cache (symbol tables, inline indexes, unwind tables, JIT maps)")
	fs.StringVar(&goMem, "go-memory-limit", strconv.Itoa(agent.DefaultGoMemoryLimit>>20)+"MiB", "soft limit of the Go runtime's memory (heap and stacks; 0 = none); GOMEMLIMIT in the environment wins")
	fs.StringVar(&mmapThreshold, "malloc-mmap-threshold", strconv.Itoa(agent.DefaultMallocMmapThreshold>>10)+"KiB", "C heap (ONNX Runtime) allocations of at least this size are mmaps of their own, returned when freed (0 = glibc's dynamic threshold); MALLOC_MMAP_THRESHOLD_ in the environment wins")
	fs.DurationVar(&cfg.SchedSlice, "sched-slice", agent.DefaultSchedSlice, "scheduling slice the agent's threads ask the kernel for, 100us to 100ms (0 = the kernel's); a short one lets a decide call preempt a worker that has run past its own slice (EEVDF, Linux 6.12+; no capability needed)")
	fs.IntVar(&cfg.Nice, "nice", agent.DefaultNice, "scheduling niceness of the agent's threads, -20 to 19 (0 = leave it); a negative one needs CAP_SYS_NICE and lets decisions preempt the node's work")
	fs.IntVar(&cfg.MaxProcs, "max-procs", agent.DefaultMaxProcs, "GOMAXPROCS of the agent (0 = Go's default, one per CPU the cgroup allows); GOMAXPROCS in the environment wins")
	fs.IntVar(&cfg.WindowMaxProcs, "window-max-procs", agent.DefaultWindowMaxProcs, "GOMAXPROCS while a flame-graph window is built, where the agent runs on one P and the cgroup allows more: 2 (the default) lets decide calls be answered beside a window instead of behind it; 0 or 1 keeps the window on the one P")
	fs.Bool(sysmonSleepFlag, false, "let the Go runtime's monitor sleep while the agent is idle, as Go does by default; then every system call after an idle spell wakes it (the agent's default keeps it ticking with GODEBUG=schedtrace, which an operator's GODEBUG schedtrace overrides; docs/footprint.md)")
	fs.IntVar(&mallocArenas, mallocArenasFlag, agent.DefaultMallocArenas, "most glibc malloc arenas, ONNX Runtime's C heap (0 = glibc's default, 8 per CPU); the agent re-executes itself with MALLOC_ARENA_MAX, which wins when already set")
	fs.StringVar(&cfg.NodeName, "node-name", "", "node name for metrics and node state (\"\" = host name; the DaemonSet sets it from spec.nodeName)")
	fs.DurationVar(&cfg.BatchWindow, "batch-window", 0, "extra time a decision batch waits for more requests (0 = only what arrived during the previous batch)")
	fs.IntVar(&cfg.MaxBatch, "max-batch", agent.DefaultMaxBatch, "most tasks in one batched model call")
	fs.IntVar(&cfg.Workers, "workers", 0, "the upstream executor's worker slots on this node, feature 0's denominator (0: the node's CPUs)")
	fs.IntVar(&cfg.CPUs, "cpus", 0, "the CPUs the upstream executor's workers share on this node (0: the CPUs the agent may run on); where they are oversubscribed and the foreground has gone, background work may run one task per CPU")
	fs.DurationVar(&cfg.TaskTimeout, "task-timeout", agent.DefaultTaskTimeout, "stop tracking a decided task whose outcome has not come after this long")
	fs.IntVar(&cfg.MaxPending, "max-pending", agent.DefaultMaxPending, "most decided tasks tracked at once (the oldest is timed out early beyond it)")
	fs.DurationVar(&cfg.StateInterval, "state-interval", agent.DefaultStateInterval, "how often the node state is refreshed")
	fs.DurationVar(&cfg.TableInterval, "table-interval", agent.DefaultTableInterval, "how often a decision table that clients subscribe to is brought up to date (0 = the default)")
	fs.IntVar(&cfg.TableMaxCells, "table-max-cells", agent.DefaultTableMaxCells, fmt.Sprintf("most cells of a decision table; the classes asked about least stay out (0 = the default; at most %d)", wire.MaxTableCells))
	fs.StringVar(&cfg.Guard, "guard", agent.DefaultGuard, "controller that decides the tasks the model is unsure of ("+strings.Join(control.GuardNames, ", ")+"), or none")
	fs.Float64Var(&minAgreement, "guard-min-agreement", guard.DefaultMinAgreement, "share of the model's ensemble members that must choose its priority, else the guard decides (0: never guard on agreement)")
	fs.BoolVar(&guardRange, "guard-out-of-range", true, "the guard decides tasks whose state lies outside the feature ranges of the model's training")
	fs.Float64Var(&keepUrgent, "guard-keep-urgent-ms", guard.DefaultKeepUrgentMs, "the model never sends to the background a task whose SLA is under this while the guard's controller admits it and it can still meet its SLA (0: off)")
	fs.Float64Var(&minAdvantage, "guard-min-advantage", guard.DefaultMinAdvantage, "the model's priority stands only where its mean Q-value beats the guard controller's level by at least this much, else the controller's level (0: off)")
	fs.BoolVar(&cfg.NoEBPF, "no-ebpf", false, "use no eBPF probe: node signals from procfs only")
	fs.StringVar(&ablate, "ablate", "", "kernel: serve the policy with every kernel feature at its neutral value, to measure what reading the kernel is worth (not for production)")
	fs.BoolVar(&cfg.ProbeCPUStats, "probe-cpu-stats", false, "measure the probes' in-kernel CPU time (triage_probe_cpu_seconds_total); costs two clock reads per BPF program run")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&logFormat, "log-format", "text", "text (key=value) or json (one object a line)")
	addConfigFlag(fs)
	finish := func() error {
		if err := limits.check(); err != nil {
			return err
		}
		var err error
		if cfg.AblateKernel, err = parseAblate(ablate); err != nil {
			return err
		}
		if mallocArenas < 0 {
			return fmt.Errorf("--%s %d: want 0 (glibc's default) or more", mallocArenasFlag, mallocArenas)
		}
		if cfg.TableInterval < 0 {
			return fmt.Errorf("--table-interval %v: want 0 (the default, %v) or more", cfg.TableInterval, agent.DefaultTableInterval)
		}
		if cfg.TableMaxCells < 0 || cfg.TableMaxCells > wire.MaxTableCells {
			return fmt.Errorf("--table-max-cells %d: want 0 (the default, %d) to %d, the most cells a client accepts", cfg.TableMaxCells, agent.DefaultTableMaxCells, wire.MaxTableCells)
		}
		cfg.Tokens = splitList(tokens)
		switch tcpAddr {
		case tcpAddrAuto:
		case "":
			cfg.DisableTCP = true
		default:
			cfg.TCPAddr = tcpAddr
		}
		cfg.CertHosts = append(splitList(nodeIP+","+podIP), splitList(sans)...)
		if cfg.ExperienceOptions.SegmentBytes, err = parseBytes(expSeg); err != nil {
			return fmt.Errorf("--experience-segment-bytes: %w", err)
		}
		if cfg.ExperienceOptions.MaxTotalBytes, err = parseBytes(expTotal); err != nil {
			return fmt.Errorf("--experience-max-bytes: %w", err)
		}
		cfg.ExperienceOptions.SyncInterval = expSync
		if cfg.GoMemoryLimit, err = parseBytes(goMem); err != nil {
			return fmt.Errorf("--go-memory-limit: %w", err)
		}
		if cfg.MallocMmapThreshold, err = parseBytes(mmapThreshold); err != nil {
			return fmt.Errorf("--malloc-mmap-threshold: %w", err)
		}
		// On the command line 0 means what it says, never; in agent.Config
		// 0 is the default and a negative value is never.
		cfg.GuardMinAgreement = minAgreement
		if minAgreement == 0 {
			cfg.GuardMinAgreement = -1
		}
		cfg.GuardIgnoreRange = !guardRange
		cfg.GuardMinAdvantage = minAdvantage
		if minAdvantage == 0 {
			cfg.GuardMinAdvantage = -1
		}
		cfg.GuardKeepUrgentMs = keepUrgent
		if keepUrgent == 0 {
			cfg.GuardKeepUrgentMs = -1
		}
		cfg.FlamegraphMaxBytes = fgMax
		cfg.Logger, err = newLogger(os.Stderr, logLevel, logFormat)
		return err
	}
	return fs, finish
}

// tcpAddrAuto is --tcp-addr's default: the QUIC address on TCP.
const tcpAddrAuto = "auto"

// newLogger is the agent's logger: slog's text or JSON handler at a level.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

func runAgent(args []string) error {
	var cfg agent.Config
	fs, finish := agentFlags(&cfg)
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := finish(); err != nil {
		return err
	}
	arenas := fs.Lookup(mallocArenasFlag).Value.(flag.Getter).Get().(int)
	sysmonSleep := fs.Lookup(sysmonSleepFlag).Value.(flag.Getter).Get().(bool)
	if err := reexecAgent(arenas, sysmonSleep); err != nil {
		cfg.Logger.Warn("the C heap keeps glibc's default arenas and the Go runtime's monitor its deep sleep", "err", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return agent.Run(ctx, cfg)
}

// parseBytes reads a size such as 4096, 64KiB, 16MiB or 1GiB.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(v), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (like 4096, 64KiB, 16MiB, 1GiB)", s)
	}
	return n * mult, nil
}
