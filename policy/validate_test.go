package policy

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestDecideRefusesBadStates checks both deciders: a NaN, an infinity or a
// value outside [0, 1] is an error naming the task and the feature, and no
// decision is guessed.
func TestDecideRefusesBadStates(t *testing.T) {
	m := BootstrapMLP()
	deciders := map[string]Decider{
		"ort": loadCPU(t, mustMarshal(t, m, BootstrapMetadata())),
		"go":  NewGoDecider(m, BootstrapMetadata()),
	}
	nan := float32(math.NaN())
	cases := []struct {
		value float32
		text  string
	}{
		{nan, "NaN"},
		{float32(math.Inf(1)), "+Inf"},
		{float32(math.Inf(-1)), "-Inf"},
		{-0.25, "-0.25"},
		{1.5, "1.5"},
	}
	for name, d := range deciders {
		for _, c := range cases {
			states := []State{Neutral, Neutral, Neutral}
			states[2][FeatRunqP50] = c.value
			out := make([]Decision, len(states))
			err := d.Decide(states, out)
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("%s, value %v: error %v, want ErrBadState", name, c.value, err)
			}
			want := fmt.Sprintf("task 2 feature %d (%s) is %s", FeatRunqP50, FeatureNames[FeatRunqP50], c.text)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q lacks %q", name, err, want)
			}
		}
		if err := d.Decide([]State{Neutral, Neutral}, make([]Decision, 1)); !errors.Is(err, ErrShortOutput) {
			t.Errorf("%s: short output: %v, want ErrShortOutput", name, err)
		}
		if err := d.Decide(nil, nil); err != nil {
			t.Errorf("%s: empty batch: %v", name, err)
		}
		edges := []State{{}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}
		if err := d.Decide(edges, make([]Decision, 2)); err != nil {
			t.Errorf("%s: 0 and 1 are valid: %v", name, err)
		}
	}
}

func TestGoDeciderRefusesBadMLP(t *testing.T) {
	d := NewGoDecider(&MLP{Layers: []Dense{{In: 3, Out: 5}}}, Metadata{})
	if err := d.Decide([]State{Neutral}, make([]Decision, 1)); !errors.Is(err, ErrBadShape) {
		t.Fatalf("error %v, want ErrBadShape", err)
	}
	if err := NewGoDecider(nil, Metadata{}).Decide([]State{Neutral}, make([]Decision, 1)); !errors.Is(err, ErrBadShape) {
		t.Fatalf("nil MLP: error %v, want ErrBadShape", err)
	}
}
