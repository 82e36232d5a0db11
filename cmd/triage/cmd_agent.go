package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/flamegraph"
)

func init() {
	register("agent", "run the node agent (QUIC endpoint, admin HTTP, experience log, flame graphs)", runAgent)
}

// agentFlags binds every `triage agent` flag to an agent.Config.
func agentFlags(cfg *agent.Config) (*flag.FlagSet, func() error) {
	fs := newFlagSet("agent", "Run the triage node agent. With no flags it serves QUIC on 127.0.0.1:4433 (add --token, --client-ca or --insecure-listen-any to listen beyond loopback), admin HTTP on :9090, the embedded model, every probe this kernel supports.")
	var tokens, expSeg, expTotal string
	var expSync time.Duration
	var fgMax int64
	var logLevel string
	fs.StringVar(&cfg.QUICAddr, "quic-addr", "", `UDP address of the QUIC endpoint ("" = 127.0.0.1:4433, or :4433 with client authentication)`)
	fs.StringVar(&cfg.AdminAddr, "admin-addr", agent.DefaultAdminAddr, "TCP address of the admin HTTP server (/metrics /healthz /readyz /flamegraphs)")
	fs.StringVar(&cfg.ModelPath, "model", "", "ONNX model to serve, watched for hot reload (\"\" = the embedded default model)")
	fs.DurationVar(&cfg.ModelWatchInterval, "model-watch-interval", time.Second, "how often --model is checked for a new file")
	fs.StringVar(&cfg.ShadowModelPath, "shadow-model", "", "candidate ONNX model run in shadow on every request (never served); promote with POST /admin/promote")
	fs.StringVar(&cfg.Device, "device", "auto", "execution device: auto (CUDA if usable, else CPU), cpu or cuda")
	fs.StringVar(&cfg.ORTLibrary, "onnxruntime-lib", "", "path of libonnxruntime.so (\"\" = $TRIAGE_ONNXRUNTIME_LIB, the cache of scripts/fetch-onnxruntime.sh, the loader path)")
	fs.StringVar(&cfg.TLSCertFile, "tls-cert", "", "PEM server certificate (\"\" = self-signed, fingerprint in the log)")
	fs.StringVar(&cfg.TLSKeyFile, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&cfg.ClientCAFile, "client-ca", "", "PEM CA that client certificates must be signed by (mutual TLS)")
	fs.StringVar(&tokens, "token", "", "bearer token(s) clients must present, comma-separated (at least 16 characters each)")
	fs.BoolVar(&cfg.InsecureListenAny, "insecure-listen-any", false, "allow a non-loopback --quic-addr without client authentication")
	fs.StringVar(&cfg.ExperienceDir, "experience-dir", "", `experience log directory ("" = `+agent.DefaultStateDir+`/experience when writable, "-" = off)`)
	fs.StringVar(&expSeg, "experience-segment-bytes", "16MiB", "rotate experience segments at this size")
	fs.StringVar(&expTotal, "experience-max-bytes", "256MiB", "cap on the experience directory; the oldest segment goes first")
	fs.DurationVar(&expSync, "experience-sync-interval", time.Second, "fsync the experience log this often")
	fs.StringVar(&cfg.FlamegraphDir, "flamegraph-dir", "", `flame-graph windows directory ("" = `+agent.DefaultStateDir+`/flamegraphs when writable, "-" = off)`)
	fs.DurationVar(&cfg.FlamegraphInterval, "flamegraph-interval", agent.DefaultFGInterval, "length of one flame-graph window")
	fs.Int64Var(&fgMax, "flamegraph-max-bytes", 256<<20, "cap on the flame-graph directory")
	fs.StringVar(&cfg.FlamegraphUnwind, "flamegraph-unwind", "auto", "how user stacks are walked: auto (stack copies unwound by .eh_frame where the kernel allows, else frame pointers), dwarf, fp")
	fs.IntVar(&cfg.FlamegraphCacheBytes, "flamegraph-cache-bytes", flamegraph.DefaultMaxCacheBytes, "cap on the symboliser's cache (symbol tables, inline indexes, unwind tables, JIT maps)")
	fs.StringVar(&cfg.NodeName, "node-name", "", "node name for metrics and node state (\"\" = host name; the DaemonSet sets it from spec.nodeName)")
	fs.DurationVar(&cfg.BatchWindow, "batch-window", 0, "extra time a decision batch waits for more requests (0 = only what arrived during the previous batch)")
	fs.IntVar(&cfg.MaxBatch, "max-batch", agent.DefaultMaxBatch, "most tasks in one batched model call")
	fs.IntVar(&cfg.QueueCap, "queue-cap", agent.DefaultQueueCap, "node task queue capacity (denominator of feature 0)")
	fs.DurationVar(&cfg.TaskTimeout, "task-timeout", agent.DefaultTaskTimeout, "stop tracking a decided task whose outcome has not come after this long")
	fs.IntVar(&cfg.MaxPending, "max-pending", agent.DefaultMaxPending, "most decided tasks tracked at once (the oldest is timed out early beyond it)")
	fs.DurationVar(&cfg.StateInterval, "state-interval", agent.DefaultStateInterval, "how often the node state is refreshed")
	fs.BoolVar(&cfg.NoEBPF, "no-ebpf", false, "use no eBPF probe: node signals from procfs only")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	addConfigFlag(fs)
	finish := func() error {
		for _, t := range strings.Split(tokens, ",") {
			if t = strings.TrimSpace(t); t != "" {
				cfg.Tokens = append(cfg.Tokens, t)
			}
		}
		var err error
		if cfg.ExperienceOptions.SegmentBytes, err = parseBytes(expSeg); err != nil {
			return fmt.Errorf("--experience-segment-bytes: %w", err)
		}
		if cfg.ExperienceOptions.MaxTotalBytes, err = parseBytes(expTotal); err != nil {
			return fmt.Errorf("--experience-max-bytes: %w", err)
		}
		cfg.ExperienceOptions.SyncInterval = expSync
		cfg.FlamegraphMaxBytes = fgMax
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
			return fmt.Errorf("--log-level: %w", err)
		}
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
		return nil
	}
	return fs, finish
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
