// Package experience is the agent's experience log: one record per finished
// task (state at decision, action, reward), append-only and checksummed, read
// back by `triage train --experience` to fine-tune a policy on what the node
// really saw.
package experience

import "github.com/triage-agent/triage/policy"

// Record is one decided task whose outcome came back.
type Record struct {
	UnixNano  int64        // when the outcome arrived
	TaskID    string       // the upstream's id
	Class     string       // task class
	State     policy.State // the state vector the decision was made on
	Action    uint8        // the priority served (0..4)
	Q         [policy.NumActions]float32
	Reward    float32      // reward of DESIGN.md, with the phase weights in force
	Phase     string       // "steady" | "peak" | "model-update"
	LatencyMs float32      // reported latency
	SLAMet    bool         // reported
	Model     string       // version of the model that decided
	Next      policy.State // node state when the outcome arrived (for the bootstrapped target)
	// TimedOut marks a task whose outcome never came within the agent's queue
	// timeout; LatencyMs is then the timeout and SLAMet is false.
	TimedOut bool
}
