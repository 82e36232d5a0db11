package policy

import "math"

// The reward of DESIGN.md, here so that the agent (which may not import
// train/) and the trainer compute the same number for the same outcome:
//
//	reward = w_lat·latency_penalty + w_sla·sla_met·class_weight + w_util·utilisation_balance
//
// with the weights of each phase (after seed 000) steady 0.40/0.45/0.15,
// peak 0.60/0.30/0.10, model-update 0.20/0.20/0.60, and the terms
//
//   - latency_penalty = −min(latency/SLA, 2)/2 ∈ [−1, 0];
//   - sla_met = 1 when the task finished within its SLA, times the class weight;
//   - utilisation_balance = 1 − |u − 0.8|/0.8 ∈ [0, 1] at CPU utilisation u.
//
// This is the one definition: train/ aliases it (train.Reward is this
// function), so the simulator and the agent cannot score differently.

// RewardPhase is the node's operating phase, which picks the weights.
type RewardPhase int

// The phases, in the order of train.Phase.
const (
	RewardSteady      RewardPhase = iota // load at or below capacity
	RewardPeak                           // overload or a burst: latency matters most
	RewardModelUpdate                    // a model was just swapped in: keep utilisation steady
)

func (p RewardPhase) String() string {
	switch p {
	case RewardPeak:
		return "peak"
	case RewardModelUpdate:
		return "model-update"
	}
	return "steady"
}

// RewardWeights are one phase's weights.
type RewardWeights struct{ Lat, SLA, Util float64 }

// PhaseRewardWeights maps each phase to its weights.
var PhaseRewardWeights = [...]RewardWeights{
	RewardSteady:      {Lat: 0.40, SLA: 0.45, Util: 0.15},
	RewardPeak:        {Lat: 0.60, SLA: 0.30, Util: 0.10},
	RewardModelUpdate: {Lat: 0.20, SLA: 0.20, Util: 0.60},
}

// TargetUtilisation is where the utilisation term peaks.
const TargetUtilisation = 0.8

// LatencyPenalty is the latency term, in [−1, 0]: 0 for an instant answer,
// −0.5 exactly at the SLA, −1 at twice the SLA or later (capped so one very
// late task cannot dominate a batch). A NaN latency or a non-positive SLA
// scores the worst.
func LatencyPenalty(latencyMs, slaMs float64) float64 {
	if !(slaMs > 0) || math.IsNaN(latencyMs) {
		return -1
	}
	return -math.Min(math.Max(latencyMs, 0)/slaMs, 2) / 2
}

// UtilisationBalance is the utilisation term, in [0, 1]: 1 at the 80%
// target, falling towards an idle node (capacity wasted) and a saturated one
// (no headroom). NaN scores 0.
func UtilisationBalance(u float64) float64 {
	if math.IsNaN(u) {
		return 0
	}
	return math.Max(0, 1-math.Abs(u-TargetUtilisation)/TargetUtilisation)
}

// Reward is the reward of one finished task. An unknown phase uses the
// steady weights.
func Reward(phase RewardPhase, latencyMs, slaMs float64, met bool, classWeight, util float64) float64 {
	w := PhaseRewardWeights[RewardSteady]
	if phase >= 0 && int(phase) < len(PhaseRewardWeights) {
		w = PhaseRewardWeights[phase]
	}
	sla := 0.0
	if met {
		sla = classWeight
	}
	return w.Lat*LatencyPenalty(latencyMs, slaMs) + w.SLA*sla + w.Util*UtilisationBalance(util)
}
