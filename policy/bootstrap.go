package policy

// BootstrapVersion is the version of the hand-set model, the one any tree
// can write in place of the trained default (policy/defaultmodel).
const BootstrapVersion = "bootstrap-0"

// BootstrapMLP returns the bootstrap model: a hand-set rule, not a trained
// network, so the tree builds and the agent runs before any training.
//
// One hidden layer of two ReLU units reads the task's own features:
//
//	h0 = relu(1 - sla)    urgency (the SLA is log-scaled)
//	h1 = relu(1 - cost)   shortness (so is the cost)
//
// and scores x = 0.8*h0 + 0.6*h1. The output Q_a = 8*a*x - a*a peaks at
// a ≈ 4x, so short tasks with tight SLAs get the high priorities and long
// relaxed ones the low.
func BootstrapMLP() *MLP {
	hidden := Dense{In: NumFeatures, Out: 2, W: make([]float32, 2*NumFeatures), B: []float32{1, 1}}
	hidden.W[0*NumFeatures+FeatSLA] = -1
	hidden.W[1*NumFeatures+FeatCost] = -1
	score := [2]float32{0.8, 0.6}
	out := Dense{In: 2, Out: NumActions, W: make([]float32, 2*NumActions), B: make([]float32, NumActions)}
	for a := 0; a < NumActions; a++ {
		for h, w := range score {
			out.W[a*2+h] = 8 * float32(a) * w
		}
		out.B[a] = -float32(a * a)
	}
	return &MLP{Layers: []Dense{hidden, out}}
}

// BootstrapMetadata is the metadata the bootstrap model carries.
func BootstrapMetadata() Metadata {
	m := CurrentMetadata(BootstrapVersion, "bootstrap model: a hand-set rule by SLA and cost, not trained (see policy.BootstrapMLP)")
	m.Extra = map[string]string{"triage.trainer": "none (hand-set)"}
	return m
}
