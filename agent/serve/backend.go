package serve

import (
	"context"

	"github.com/triage-agent/triage/wire"
)

// Backend is what the endpoint serves: the agent implements it with its
// policy and state assembly. Every method must be safe for concurrent use.
type Backend interface {
	// Decide returns one decision per task, in order, with the version of the
	// model that decided and the epoch of the node-state snapshot it used.
	Decide(ctx context.Context, tasks []*wire.Task) (decisions []*wire.Decision, model string, stateEpoch uint64, err error)
	// ReportOutcomes takes finished tasks (they become rewards).
	ReportOutcomes(ctx context.Context, outcomes []*wire.Outcome) error
	// State returns the current node-state snapshot. The endpoint polls it
	// every Config.StateInterval for subscribers and pushes a snapshot whose
	// Epoch changed, so it must be cheap; the returned value is not modified
	// afterwards by the backend (return a new one per epoch).
	State() *wire.NodeState
}
