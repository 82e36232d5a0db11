package policy

import (
	"math"
	"testing"
)

// The Feat* constants cover the vector once each, and each names the slot
// Vector writes its input into.
func TestFeatureIndicesMatchVector(t *testing.T) {
	if FeatBacklogAll != NumFeatures-1 {
		t.Fatalf("last feature index %d, vector length %d", FeatBacklogAll, NumFeatures)
	}
	seen := map[string]bool{}
	for i, n := range FeatureNames {
		if n == "" || seen[n] {
			t.Fatalf("feature %d name %q: empty or repeated", i, n)
		}
		seen[n] = true
	}
	nan := math.NaN()
	unknown := Inputs{QueueLen: nan, Workers: nan, SLAMs: nan, CostMs: nan, ClassP50Ms: nan, ClassP99Ms: nan,
		AccelMemFill: nan, RunqP50Us: nan, RunqP99Us: nan, AcceptQueueFill: nan, BlkioP99Us: nan, CPUUtil: nan,
		RetransFraction: nan, SyscallP99Us: nan, WaitP50Ms: nan, WaitP99Ms: nan}
	if v := Vector(&unknown); v != Neutral {
		t.Fatalf("all unknown = %v, want Neutral %v", v, Neutral)
	}
	for feat, set := range map[int]func(*Inputs){
		FeatQueue:        func(in *Inputs) { in.QueueLen, in.Workers = 3*(math.Pow(65, 0.25)-1), 3 }, // log2(1+x)/log2(65) = 1/4
		FeatSLA:          func(in *Inputs) { in.SLAMs = 0.1 * math.Pow(1e6, 0.25) },
		FeatAccelMem:     func(in *Inputs) { in.AccelMemFill = 0.25 },
		FeatAcceptQueue:  func(in *Inputs) { in.AcceptQueueFill = 0.25 },
		FeatCPUUtil:      func(in *Inputs) { in.CPUUtil = 0.25 },
		FeatNetOrSyscall: func(in *Inputs) { in.RetransFraction = 0.0125 },
	} {
		in := unknown
		set(&in)
		v := Vector(&in)
		for i := range v {
			want := Neutral[i]
			if i == feat {
				want = 0.25
			}
			if v[i] != want {
				t.Errorf("setting %s: feature %s = %v, want %v", FeatureNames[feat], FeatureNames[i], v[i], want)
			}
		}
	}
}

// The relative features read the task's SLA: a cost of a third of it, a
// class p99 and a wait as long as it, and backlogs of one and three SLAs
// per worker at the top and in the foreground.
func TestRelativeFeatures(t *testing.T) {
	in := Inputs{SLAMs: 30, CostMs: 10, ClassP99Ms: 30, WaitP99Ms: 30, Workers: 2,
		InFlightMs: [NumActions]float64{4: 60, 2: 120, 0: 1000}}
	v := Vector(&in)
	want := map[int]float32{
		FeatCostOverSLA: 0.25, FeatClassP99OverSLA: 0.5, FeatWaitP99OverSLA: 0.5,
		FeatBacklogTop: 0.5, FeatBacklogFore: 0.75, FeatBacklogAll: float32(squash(1180.0 / 2 / 30)),
	}
	for f, w := range want {
		if math.Abs(float64(v[f]-w)) > 1e-6 {
			t.Errorf("%s = %v, want %v", FeatureNames[f], v[f], w)
		}
	}
	in.SLAMs = math.NaN()
	v = Vector(&in)
	for f := range want {
		if v[f] != Neutral[f] {
			t.Errorf("without an SLA %s = %v, want neutral", FeatureNames[f], v[f])
		}
	}
}
