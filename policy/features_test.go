package policy

import (
	"math"
	"testing"
)

// The Feat* constants cover the vector once each, and each names the slot
// Vector writes its input into.
func TestFeatureIndicesMatchVector(t *testing.T) {
	if FeatNetOrSyscall != NumFeatures-1 {
		t.Fatalf("last feature index %d, vector length %d", FeatNetOrSyscall, NumFeatures)
	}
	seen := map[string]bool{}
	for i, n := range FeatureNames {
		if n == "" || seen[n] {
			t.Fatalf("feature %d name %q: empty or repeated", i, n)
		}
		seen[n] = true
	}
	nan := math.NaN()
	unknown := Inputs{QueueLen: nan, QueueCap: nan, RemainingMs: nan, SLAMs: nan, CostMs: nan, ClassP50Ms: nan, ClassP99Ms: nan,
		AccelMemFill: nan, RunqP50Us: nan, RunqP99Us: nan, AcceptQueueFill: nan, BlkioP99Us: nan, CPUUtil: nan,
		RetransFraction: nan, SyscallP99Us: nan}
	if v := Vector(&unknown); v != Neutral {
		t.Fatalf("all unknown = %v, want Neutral %v", v, Neutral)
	}
	for feat, set := range map[int]func(*Inputs){
		FeatQueueFill:    func(in *Inputs) { in.QueueLen, in.QueueCap = 1, 4 },
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
