package train

import (
	"math"
	"testing"

	"github.com/triage-agent/triage/policy"
)

// The simulator's feature 20 is the share of the previous arrivals (at
// most policy.SLAWindowSize) whose SLA is under half the task's own, as
// the agent computes it from the tasks it decided: in tinyScenario the
// 1 s class sees the 15 ms class's share of the mix (70%), the 15 ms class
// sees none.
func TestSimulatorStatesCarryTheTighterShare(t *testing.T) {
	sc := tinyScenario(t, 50)
	var sum [2]float64
	var n [2]int
	seen := 0
	_, err := Run(sc, FIFO{}, SimConfig{OnDecide: func(o *Outcome) {
		if seen++; seen > policy.SLAWindowSize { // past the first, partial window
			sum[o.Class] += float64(o.State[policy.FeatTighterShare])
			n[o.Class]++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	short, long := sum[0]/float64(n[0]), sum[1]/float64(n[1])
	if short != 0 {
		t.Fatalf("the 15 ms class saw a tighter share of %v, want 0", short)
	}
	if math.Abs(long-0.7) > 0.07 {
		t.Fatalf("the 1 s class saw a mean tighter share of %.3f, want about 0.7 (the 15 ms share)", long)
	}
}
