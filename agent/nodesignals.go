package agent

import (
	"fmt"

	"github.com/triage-agent/triage/agent/signals"
)

// NodeSignals is where the agent reads the node's kernel signals; a
// *signals.Collector is one. The agent reads it on every state refresh
// (StateInterval), never per task.
type NodeSignals interface {
	// Snapshot copies the latest signals into dst, reusing its slices.
	Snapshot(dst *signals.Snapshot)
	Close() error
}

// newNodeSignals starts the signals collector with every probe this kernel
// supports (none with cfg.NoEBPF). A probe that cannot attach falls back to
// the collector's own netlink or procfs reader for its signal, so the
// collector starts on any kernel.
func newNodeSignals(cfg Config) (NodeSignals, error) {
	var opts []signals.Option
	if cfg.NoEBPF {
		opts = append(opts, signals.WithoutBPF())
	}
	c, err := signals.New(signals.Config{ProbeCPUStats: cfg.ProbeCPUStats}, opts...)
	if err != nil {
		return nil, fmt.Errorf("starting the node signals: %w", err)
	}
	return c, nil
}
