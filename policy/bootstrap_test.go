package policy

import "testing"

func TestBootstrapRule(t *testing.T) {
	d := NewGoDecider(BootstrapMLP(), BootstrapMetadata())
	task := func(slaMs, costMs float64) State {
		s := Neutral
		s[FeatSLA], s[FeatCost] = LogScaleMs(slaMs), LogScaleMs(costMs)
		return s
	}
	cases := []struct {
		name  string
		state State
		want  int
	}{
		{"urgent and short", task(1, 0.2), 4},
		{"relaxed and long", task(100_000, 50_000), 0},
		{"middling", task(1000, 100), 2},
	}
	states := make([]State, len(cases))
	for i, c := range cases {
		states[i] = c.state
	}
	out := make([]Decision, len(cases))
	if err := d.Decide(states, out); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if out[i].Priority != c.want {
			t.Errorf("%s: priority %d (Q %v), want %d", c.name, out[i].Priority, out[i].Q, c.want)
		}
	}
	if err := CheckSchema(BootstrapMetadata()); err != nil {
		t.Errorf("bootstrap metadata: %v", err)
	}
}
