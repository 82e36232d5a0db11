package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The Feat* constants cover the vector once each, and each names the slot
// Vector writes its input into.
func TestFeatureIndicesMatchVector(t *testing.T) {
	if FeatTighterShare != NumFeatures-1 {
		t.Fatalf("last feature index %d, vector length %d", FeatTighterShare, NumFeatures)
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
		RetransFraction: nan, SyscallP99Us: nan, WaitP50Ms: nan, WaitP99Ms: nan, TighterShare: nan}
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
		FeatTighterShare: func(in *Inputs) { in.TighterShare = 0.25 },
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

// SetQueue recomputes exactly Vector's queue features: a state made for one
// queue and moved to another equals the state made for the other, bit for
// bit, whatever the other inputs are (unknown values included), and the
// features that do not depend on the queue are left as they were.
func TestSetQueueIsVectorsQueuePart(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	value := func() float64 {
		switch rng.IntN(8) {
		case 0:
			return math.NaN()
		case 1:
			return -1
		case 2:
			return math.Inf(1)
		case 3:
			return 0
		default:
			return math.Exp(rng.Float64()*20 - 5)
		}
	}
	queue := func(in *Inputs) {
		in.QueueLen = value()
		for lv := range in.InFlightMs {
			in.InFlightMs[lv] = value()
		}
	}
	queueFeature := map[int]bool{FeatQueue: true, FeatBacklogTop: true, FeatBacklogFore: true, FeatBacklogAll: true}
	for n := 0; n < 5000; n++ {
		in := Inputs{Workers: value(), SLAMs: value(), CostMs: value(), ClassP50Ms: value(), ClassP99Ms: value(),
			AccelMemFill: rng.Float64(), RunqP50Us: value(), RunqP99Us: value(), AcceptQueueFill: rng.Float64(),
			BlkioP99Us: value(), CPUUtil: rng.Float64(), RetransFraction: value(), SyscallP99Us: value(),
			SyscallFeature: rng.IntN(2) == 0, WaitP50Ms: value(), WaitP99Ms: value()}
		queue(&in)
		s := Vector(&in)
		before := s
		queue(&in)
		s.SetQueue(&in)
		if want := Vector(&in); s != want {
			t.Fatalf("inputs %+v: SetQueue gave %v, Vector %v", in, s, want)
		}
		for i := range s {
			if !queueFeature[i] && s[i] != before[i] {
				t.Fatalf("SetQueue changed %s: %v -> %v", FeatureNames[i], before[i], s[i])
			}
		}
	}
}

// A state for another queue row: the whole vector against its queue part.
func BenchmarkVector(b *testing.B) {
	in := Inputs{QueueLen: 12, Workers: 4, SLAMs: 20, CostMs: 2, ClassP50Ms: 3, ClassP99Ms: 9, RunqP50Us: 40,
		RunqP99Us: 900, BlkioP99Us: 4000, CPUUtil: 0.9, RetransFraction: 0.001, WaitP50Ms: 1, WaitP99Ms: 30,
		InFlightMs: [NumActions]float64{100, 0, 0, 0, 30}}
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			in.QueueLen++
			sink = Vector(&in)
		}
	})
	b.Run("queue", func(b *testing.B) {
		s := Vector(&in)
		for b.Loop() {
			in.QueueLen++
			s.SetQueue(&in)
		}
		sink = s
	})
}

var sink State
