package policy

// Decision is the policy's answer for one task: the chosen priority, the
// Q-value of every priority level, and how sure the network is of it.
type Decision struct {
	Priority int
	Q        [NumActions]float32
	// Agreement is the fraction of an ensemble's members whose own best
	// priority is Priority (the mean's); 1 for a single network.
	Agreement float32
	// OutOfRange is set when the state lies outside the feature ranges the
	// model was trained on (Metadata.Ranges, by more than RangeTolerance):
	// the network's answer there is an extrapolation.
	OutOfRange bool
	// MissesSLA is set when the task cannot meet its SLA even at the top
	// priority (State.MissesSLAAtTop): the guard then lets the network send
	// urgent work to the background (guard.Config.KeepUrgentMs).
	MissesSLA bool
}

// settle fills in what follows from d.Q, the members' Q-values (member-major,
// k members) and the state: the priority, the agreement, the range flag and
// whether the task can still meet its SLA.
func (d *Decision) settle(members []float32, k int, ranges *FeatureRanges, s *State) {
	d.Priority = Argmax(&d.Q)
	d.Agreement = agreement(members, k, d.Priority)
	d.OutOfRange = ranges.Outside(s) >= 0
	d.MissesSLA = s.MissesSLAAtTop()
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
