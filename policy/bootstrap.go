package policy

// BootstrapVersion is the version of the hand-set model the tree ships
// until `make model` writes a trained one.
const BootstrapVersion = "bootstrap-0"

// BootstrapMLP returns the bootstrap model: a hand-set rule, not a trained
// network, so the tree builds and the agent runs before any training.
//
// One hidden layer of three ReLU units reads the task's own features:
//
//	h0 = relu(1 - slack)      urgency
//	h1 = relu(1 - cost)       shortness (cost is log-scaled)
//	h2 = relu(1 - 20*slack)   1 when the deadline has passed, 0 from 5% slack up
//
// and scores x = 0.6*h0 + 0.4*h1 - 1.2*h2. The output Q_a = 8*a*x - a*a
// peaks at a ≈ 4x, so urgent short tasks get priority 4, relaxed long ones
// 0, and a task that can no longer meet its SLA is demoted to 0 instead of
// taking a slot from one that still can (least slack first with demotion).
func BootstrapMLP() *MLP {
	const slack, cost = 1, 2 // feature indices
	hidden := Dense{In: NumFeatures, Out: 3, W: make([]float32, 3*NumFeatures), B: []float32{1, 1, 1}}
	hidden.W[0*NumFeatures+slack] = -1
	hidden.W[1*NumFeatures+cost] = -1
	hidden.W[2*NumFeatures+slack] = -20
	score := [3]float32{0.6, 0.4, -1.2}
	out := Dense{In: 3, Out: NumActions, W: make([]float32, 3*NumActions), B: make([]float32, NumActions)}
	for a := 0; a < NumActions; a++ {
		for h, w := range score {
			out.W[a*3+h] = 8 * float32(a) * w
		}
		out.B[a] = -float32(a * a)
	}
	return &MLP{Layers: []Dense{hidden, out}}
}

// BootstrapMetadata is the metadata the bootstrap model carries.
func BootstrapMetadata() Metadata {
	m := CurrentMetadata(BootstrapVersion, "bootstrap model: a hand-set least-slack-first rule with demotion of late tasks, not trained (see policy.BootstrapMLP)")
	m.Extra = map[string]string{"triage.trainer": "none (hand-set)"}
	return m
}
