package policy

import (
	"math"
	"testing"
)

func TestPhaseRewardWeights(t *testing.T) {
	want := map[RewardPhase]RewardWeights{
		RewardSteady:      {Lat: 0.40, SLA: 0.45, Util: 0.15},
		RewardPeak:        {Lat: 0.60, SLA: 0.30, Util: 0.10},
		RewardModelUpdate: {Lat: 0.20, SLA: 0.20, Util: 0.60},
	}
	for ph, w := range want {
		if PhaseRewardWeights[ph] != w {
			t.Errorf("%s weights %+v, want %+v", ph, PhaseRewardWeights[ph], w)
		}
		// A met task answered instantly at the target utilisation earns
		// exactly w_sla·weight + w_util; at twice its SLA, unmet, on an idle
		// node, exactly −w_lat.
		if r := Reward(ph, 0, 100, true, 2, TargetUtilisation); math.Abs(r-(2*w.SLA+w.Util)) > 1e-12 {
			t.Errorf("%s best-case reward %v, want %v", ph, r, 2*w.SLA+w.Util)
		}
		if r := Reward(ph, 500, 100, false, 1, 0); math.Abs(r+w.Lat) > 1e-12 {
			t.Errorf("%s worst-case reward %v, want %v", ph, r, -w.Lat)
		}
	}
	if LatencyPenalty(100, 100) != -0.5 || UtilisationBalance(0.4) != 0.5 {
		t.Errorf("term definitions changed: penalty at SLA %v, balance at 0.4 %v", LatencyPenalty(100, 100), UtilisationBalance(0.4))
	}
}

func TestRewardBadInputsScoreWorstLatency(t *testing.T) {
	w := PhaseRewardWeights[RewardSteady]
	for _, c := range []struct{ lat, sla float64 }{{math.NaN(), 20}, {10, 0}, {10, -1}} {
		if r := Reward(RewardSteady, c.lat, c.sla, false, 1, math.NaN()); r != -w.Lat {
			t.Errorf("latency %v SLA %v: reward %v, want %v", c.lat, c.sla, r, -w.Lat)
		}
	}
	if r := Reward(RewardPhase(99), 0, 100, true, 1, TargetUtilisation); r != Reward(RewardSteady, 0, 100, true, 1, TargetUtilisation) {
		t.Errorf("unknown phase should use the steady weights, got %v", r)
	}
}
