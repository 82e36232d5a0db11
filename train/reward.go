package train

import "github.com/triage-agent/triage/policy"

// The reward of DESIGN.md is defined once, in policy/reward.go, because the
// agent (which may not import train) scores outcomes with it too; these
// aliases keep the trainer's names. The weights per phase (after seed 000):
// steady 0.40/0.45/0.15, peak 0.60/0.30/0.10, model-update 0.20/0.20/0.60;
// the terms are documented on policy.LatencyPenalty and
// policy.UtilisationBalance.

// Phase is the node's operating phase; it picks the reward weights.
// PhaseSteady: offered load at or below capacity, no burst. PhasePeak:
// offered load above capacity or inside a burst (queues grow and every late
// start compounds). PhaseModelUpdate: the agent is swapping models.
type Phase = policy.RewardPhase

const (
	PhaseSteady      = policy.RewardSteady
	PhasePeak        = policy.RewardPeak
	PhaseModelUpdate = policy.RewardModelUpdate
)

// Weights are one phase's weights.
type Weights = policy.RewardWeights

// PhaseWeights maps each phase to its weights.
var PhaseWeights = &policy.PhaseRewardWeights

// TargetUtilisation is where utilisation_balance peaks.
const TargetUtilisation = policy.TargetUtilisation

// LatencyPenalty, UtilisationBalance and Reward are policy's.
var (
	LatencyPenalty     = policy.LatencyPenalty
	UtilisationBalance = policy.UtilisationBalance
	Reward             = policy.Reward
)
