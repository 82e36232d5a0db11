package policy

// Decision is the policy's answer for one task: the chosen priority and the
// Q-value of every priority level.
type Decision struct {
	Priority int
	Q        [NumActions]float32
}

// Decider is what the agent and the evaluator call: a batch of states in, one
// decision per state out. The ONNX Runtime session and the plain Go MLP both
// implement it.
type Decider interface {
	// Decide fills out[i] for states[i]; len(out) must be at least len(states).
	// A state with a value outside [0, 1] or NaN is an error, not a guess.
	Decide(states []State, out []Decision) error
	// Version names the model (from its metadata), for answers and metrics.
	Version() string
}
