package policy

import (
	"errors"
	"fmt"
	"math"
)

var (
	// ErrBadState reports a state value that is NaN, infinite or outside [0, 1].
	ErrBadState = errors.New("policy: bad state")
	// ErrShortOutput reports an out slice shorter than the states.
	ErrShortOutput = errors.New("policy: output slice shorter than states")
)

// ValidateStates checks every value of every state and names the first bad
// one by task index and feature, so the caller can find the source that
// produced it.
func ValidateStates(states []State) error {
	for i := range states {
		for j, x := range states[i] {
			// One comparison pair catches NaN too: NaN fails both.
			if !(x >= 0 && x <= 1) {
				return fmt.Errorf("%w: task %d feature %d (%s) is %v, want a value in [0, 1]", ErrBadState, i, j, FeatureNames[j], describe(x))
			}
		}
	}
	return nil
}

func describe(x float32) string {
	switch {
	case math.IsNaN(float64(x)):
		return "NaN"
	case math.IsInf(float64(x), 1):
		return "+Inf"
	case math.IsInf(float64(x), -1):
		return "-Inf"
	}
	return fmt.Sprint(x)
}

func checkDecideArgs(states []State, out []Decision) error {
	if len(out) < len(states) {
		return fmt.Errorf("%w: %d states, %d outputs", ErrShortOutput, len(states), len(out))
	}
	return ValidateStates(states)
}
