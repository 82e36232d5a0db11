package train

import (
	"math"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// A varied node reads its kernel features differently and nothing else: the
// tasks, their service and every non-kernel feature are the calibrated
// node's, bit for bit; only the run-queue and block-I/O features move.
func TestVariedNodeChangesOnlyTheKernelReadings(t *testing.T) {
	sc := tinyScenario(t, 70)
	kernel := map[int]bool{}
	for _, f := range policy.KernelFeatures {
		kernel[f] = true
	}
	moved := map[int]bool{}
	for seed := int64(1); seed <= 4; seed++ {
		plain, err := Run(sc, FIFO{}, SimConfig{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		varied, err := Run(sc, FIFO{}, SimConfig{Seed: seed, VaryNode: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range plain {
			if plain[i].StartMs != varied[i].StartMs || plain[i].FinishMs != varied[i].FinishMs {
				t.Fatalf("seed %d task %d: start/finish %v/%v calibrated, %v/%v varied; the node's speed must not vary",
					seed, i, plain[i].StartMs, plain[i].FinishMs, varied[i].StartMs, varied[i].FinishMs)
			}
			for f := range policy.NumFeatures {
				if plain[i].State[f] == varied[i].State[f] {
					continue
				}
				if !kernel[f] {
					t.Fatalf("seed %d task %d: feature %s moved (%v -> %v); only kernel features may", seed, i, policy.FeatureNames[f], plain[i].State[f], varied[i].State[f])
				}
				moved[f] = true
			}
		}
	}
	for _, f := range []int{policy.FeatRunqP50, policy.FeatRunqP99, policy.FeatBlkioP99} {
		if !moved[f] {
			t.Errorf("feature %s never moved on 4 varied nodes", policy.FeatureNames[f])
		}
	}
}

// The draw is the seed's, within its ranges, and covers both quiet levels.
func TestNodeVariationDraws(t *testing.T) {
	if drawNodeVariation(3, 1) != drawNodeVariation(3, 1) {
		t.Fatal("two draws of seed 3 differ")
	}
	idle := map[bool]int{}
	varied := 0
	for seed := int64(1); seed <= 64; seed++ {
		if drawNodeVariation(seed, 0.5) != calibratedNode {
			varied++
		}
		v := drawNodeVariation(seed, 1)
		if !(v.blkScale >= blkScaleLo && v.blkScale <= blkScaleHi) || !(v.runqScale >= runqScaleLo && v.runqScale <= runqScaleHi) {
			t.Fatalf("seed %d: %+v outside the ranges", seed, v)
		}
		idle[v.quietIdle]++
	}
	if idle[true] < 16 || idle[false] < 16 {
		t.Errorf("quiet level idle in %d of 64 draws, want about half", idle[true])
	}
	if varied < 16 || varied > 48 {
		t.Errorf("%d of 64 nodes varied at probability 0.5", varied)
	}
}

// With nobody writing, a quietIdle node reads the idle node's p99 (the
// background I/Os the agent's histogram holds), scaled; with writers, the
// writers' level, scaled; the calibrated node reads the calibration.
func TestVariedBlockIOLevels(t *testing.T) {
	cal := DefaultCalibration()
	lone, busy := cal.IOAt(0), cal.IOAt(3)
	v := nodeVariation{blkScale: 2, runqScale: 1, quietIdle: true, blkSigma: variedBlkSigma}
	idle := *cal
	idle.Idle.BlkioP99Us = 520 // an idle node whose disk did background I/O while it was calibrated
	if us, _ := v.blkio(&idle, lone, 0); us != 2*idle.Idle.BlkioP99Us {
		t.Errorf("quiet idle node, no writer: %v µs, want 2 × idle %v", us, idle.Idle.BlkioP99Us)
	}
	idle.Idle.BlkioP99Us = 0 // no I/O completed while it was idle: the lone writer's level
	if us, _ := v.blkio(&idle, lone, 0); us != 2*lone.BlkioP99Us {
		t.Errorf("quiet idle node without background I/O, no writer: %v µs, want 2 × the lone writer's %v", us, lone.BlkioP99Us)
	}
	if us, sigma := v.blkio(cal, busy, 4); us != 2*busy.BlkioP99Us || sigma != math.Max(busy.BlkioP99Sigma, variedBlkSigma) {
		t.Errorf("4 writers: %v µs sigma %v, want 2 × %v and sigma at least %v", us, sigma, busy.BlkioP99Us, variedBlkSigma)
	}
	if us, sigma := calibratedNode.blkio(cal, lone, 0); us != lone.BlkioP99Us || sigma != lone.BlkioP99Sigma {
		t.Errorf("calibrated node, no writer: %v µs sigma %v, want the lone writer's %v, %v", us, sigma, lone.BlkioP99Us, lone.BlkioP99Sigma)
	}
}

// kernelReader serves every task at one level while the block-I/O
// feature reads a quiet disk, and puts long-SLA work in the background
// otherwise: a policy whose decisions follow a kernel reading.
type kernelReader struct{}

func (kernelReader) Name() string { return "kernel-reader" }
func (kernelReader) Assign(t *Task, v *NodeView) (int, float64, error) {
	if v.State[policy.FeatBlkioP99] < 0.2 || t.SLAMs < 100 {
		return 4, 0, nil
	}
	return 0, 0, nil
}

// An evaluation on varied nodes runs every policy on the same node: a
// policy that reads no kernel feature scores as on the calibrated node,
// one that does scores otherwise.
func TestEvaluateOnVariedNodes(t *testing.T) {
	sc := tinyScenario(t, 70)
	seeds := []int64{1, 2, 3, 4}
	plain, err := EvaluateSeeds(sc, seeds, FIFO{}, kernelReader{})
	if err != nil {
		t.Fatal(err)
	}
	varied, err := EvaluateSeedsVaried(sc, seeds, 1, FIFO{}, kernelReader{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := plain.Policies["fifo"], varied.Policies["fifo"]; a.SLAAttainment != b.SLAAttainment || a.P99Ms != b.P99Ms || a.GoodputPerS != b.GoodputPerS {
		t.Errorf("fifo: %+v on the calibrated node, %+v on varied ones; it reads no kernel feature", plain.Policies["fifo"], varied.Policies["fifo"])
	}
	if plain.Policies["kernel-reader"].SLAAttainment == varied.Policies["kernel-reader"].SLAAttainment {
		t.Errorf("kernel-reader scored %.4f on both; its decisions follow the block-I/O reading", plain.Policies["kernel-reader"].SLAAttainment)
	}
}
