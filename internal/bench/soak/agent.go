package soak

import (
	"context"
	"strconv"

	"github.com/triage-agent/triage/internal/bench/agentproc"
)

type agentConfig struct {
	bin, dir, model string
	noEBPF          bool
	expMaxBytes     int64
}

// agentProc is the `triage agent` child under soak.
type agentProc = agentproc.Process

// startAgent runs `triage agent` with the soak's model (which the reloader
// rewrites) and an experience cap sized for the whole run, and waits until
// it is ready. Its error lines go into the soak's error (Err), not to the
// terminal.
func startAgent(ctx context.Context, c agentConfig) (*agentProc, error) {
	return agentproc.Start(ctx, agentproc.Config{
		Bin: c.bin, Dir: c.dir, Model: c.model, NoEBPF: c.noEBPF,
		ExtraArgs: []string{"--experience-max-bytes", strconv.FormatInt(c.expMaxBytes, 10)},
	})
}
