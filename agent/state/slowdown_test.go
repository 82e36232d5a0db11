package state

import (
	"math"
	"testing"
)

// The assembler's slowdown is the reported service times over the costs
// the descriptors gave, unknown until enough tasks told both; a task
// without a cost or a service time says nothing.
func TestAssemblerSlowdownFromReportedServiceTimes(t *testing.T) {
	a := NewAssembler(Config{})
	if v := a.Slowdown(); !math.IsNaN(v) {
		t.Fatalf("no outcome yet: %v, want NaN", v)
	}
	for range 32 {
		a.ObserveService(30, 10)
		a.ObserveService(30, 0)  // no described cost
		a.ObserveService(0, 10)  // no service time
		a.ObserveService(-1, 10) // nonsense
	}
	if v := a.Slowdown(); v != 3 {
		t.Fatalf("tasks three times their cost: %v, want 3", v)
	}
}
