package policy

import "testing"

func TestBootstrapRule(t *testing.T) {
	d := NewGoDecider(BootstrapMLP(), BootstrapMetadata())
	task := func(slack, cost float32) State {
		s := Neutral
		s[1], s[2] = slack, cost
		return s
	}
	cases := []struct {
		name  string
		state State
		want  int
	}{
		{"urgent and short", task(0.1, 0.1), 4},
		{"relaxed and long", task(1, 0.9), 0},
		{"half slack, mid cost", task(0.5, 0.5), 2},
		{"deadline passed", task(0, 0.1), 0},
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
