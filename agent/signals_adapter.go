package agent

import (
	"log/slog"
	"sync"

	"github.com/triage-agent/triage/agent/profiling"
	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/agent/signals"
	"github.com/triage-agent/triage/agent/state"
)

// collectorSignals adapts signals.Collector (eBPF with per-signal procfs
// fallbacks) to NodeSignals.
type collectorSignals struct {
	c    *signals.Collector
	asm  *state.Assembler
	mu   sync.Mutex
	snap signals.Snapshot
}

// newDefaultSignals starts the signals collector with every probe (none
// with cfg.NoEBPF); if even that fails, the plain procfs reader serves.
// asm turns the collector's snapshots into state inputs.
func newDefaultSignals(cfg Config, asm *state.Assembler, log *slog.Logger) NodeSignals {
	var opts []signals.Option
	if cfg.NoEBPF {
		opts = append(opts, signals.WithoutBPF())
	}
	c, err := signals.New(signals.Config{}, opts...)
	if err != nil {
		log.Warn("node signals collector unavailable; serving from /proc/stat and /proc/net/snmp only", "err", err)
		return newProcfsSignals(asm)
	}
	return &collectorSignals{c: c, asm: asm}
}

// kind is the collector's source name ("ebpf", "procfs", "netlink", ...),
// or "none" when it names none.
func kind(s signals.Source) string {
	if s.Kind == "" {
		return SourceNone
	}
	return string(s.Kind)
}

func (s *collectorSignals) Read() NodeReading {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.Snapshot(&s.snap)
	sn := &s.snap
	r := NodeReading{
		Node: s.asm.NodeInputs(sn),
		// Every probe has attached or fallen back once New returned.
		Settled: true,
	}
	taskSources(&r.Sources)
	r.Sources[5] = SourceNone // accelerator memory: no NVML reader in this build
	r.Sources[6], r.Sources[7] = kind(sn.RunQueue.Source), kind(sn.RunQueue.Source)
	r.Sources[8] = kind(sn.Accept.Source)
	r.Sources[9] = kind(sn.Blkio.Source)
	r.Sources[10] = kind(sn.CPU.Source)
	r.Sources[11] = kind(sn.TCP.Source)
	for _, p := range sn.Probes {
		d := p.Tier
		if !p.Attached {
			d = p.Reason
		}
		r.Probes = append(r.Probes, ProbeState{Name: p.Name, Attached: p.Attached, Detail: d, CostNs: -1})
	}
	return r
}

func (s *collectorSignals) Close() error { return s.c.Close() }

// newProfiler loads the stack sampler; without it the agent runs without
// flame graphs (and says so), never fails.
func newProfiler(log *slog.Logger) profiler {
	r, err := profiling.New(profiling.Config{Logger: log})
	if err != nil {
		log.Warn("flame-graph recorder unavailable; /flamegraphs lists what is on disk", "err", err)
		return nil
	}
	return r
}

// codecBytes is what the endpoint wrote on native streams and datagrams:
// payload bytes before the delta codec and frame bytes after it.
func codecBytes(st *serve.Stats) (payload, wireBytes uint64, ok bool) {
	p, w := st.PayloadBytes.Load(), st.WireBytes.Load()
	return uint64(max(p, 0)), uint64(max(w, 0)), w > 0
}
