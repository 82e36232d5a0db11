package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestFeatureRangesObserveAndOutside(t *testing.T) {
	var r FeatureRanges
	if !r.Empty() || r.Outside(&State{0: 1}) != -1 {
		t.Fatal("empty ranges must know nothing and call every state inside")
	}
	var nilRanges *FeatureRanges
	if nilRanges.Outside(&Neutral) != -1 {
		t.Fatal("nil ranges must call every state inside")
	}
	a, b := Neutral, Neutral
	a[FeatQueue], b[FeatQueue] = 0.1, 0.3
	a[FeatRunqP99], b[FeatRunqP99] = 0.5, 0.2
	r.Observe(a)
	r.Observe(b)
	if r.Lo[FeatQueue] != 0.1 || r.Hi[FeatQueue] != 0.3 || r.Lo[FeatRunqP99] != 0.2 || r.Hi[FeatRunqP99] != 0.5 {
		t.Fatalf("ranges %v..%v", r.Lo, r.Hi)
	}
	for _, c := range []struct {
		queue float32
		want  int
	}{{0.2, -1}, {0.3 + RangeTolerance/2, -1}, {0.1 - RangeTolerance/2, -1}, {0.3 + 2*RangeTolerance, FeatQueue}, {0, FeatQueue}} {
		s := a
		s[FeatQueue] = c.queue
		if got := r.Outside(&s); got != c.want {
			t.Errorf("queue %v: Outside %d, want %d", c.queue, got, c.want)
		}
	}
}

func TestFeatureRangesEncodeParse(t *testing.T) {
	var r FeatureRanges
	s := Neutral
	s[FeatCPUUtil] = 1.0 / 3
	r.Observe(s)
	s[FeatCPUUtil] = 0.9
	r.Observe(s)
	got, err := ParseFeatureRanges(r.Encode())
	if err != nil || *got != r {
		t.Fatalf("round trip %q: %+v, %v", r.Encode(), got, err)
	}
	good := strings.Split(r.Encode(), ",")
	with := func(i int, v string) string {
		p := append([]string(nil), good...)
		p[i] = v
		return strings.Join(p, ",")
	}
	for name, v := range map[string]string{
		"empty":          "",
		"one short":      strings.Join(good[1:], ","),
		"one more":       r.Encode() + ",0:1",
		"lo above hi":    with(3, "0.6:0.5"),
		"above 1":        with(3, "0:1.5"),
		"negative":       with(3, "-0.1:0.5"),
		"NaN":            with(3, "NaN:NaN"),
		"no colon":       with(3, "0.5"),
		"not a number":   with(3, "a:b"),
		"a million bars": strings.Repeat(",", 1_000_000),
	} {
		if _, err := ParseFeatureRanges(v); !errors.Is(err, ErrBadMetadata) {
			t.Errorf("%s: %v, want ErrBadMetadata", name, err)
		}
	}
}

// A model whose metadata carries ranges marks the states outside them, in
// ONNX Runtime and in Go; a model without ranges marks none.
func TestDecisionOutOfRange(t *testing.T) {
	meta := BootstrapMetadata()
	meta.Ranges = &FeatureRanges{}
	in := Neutral
	in[FeatRunqP99] = 0.3
	meta.Ranges.Observe(in)
	in[FeatRunqP99] = 0.6
	meta.Ranges.Observe(in)
	out := in
	out[FeatRunqP99] = 0.9 // a run queue training never saw
	b := mustMarshal(t, BootstrapMLP(), meta)
	if got, err := ReadMetadata(b); err != nil || got.Ranges == nil || *got.Ranges != *meta.Ranges {
		t.Fatalf("ReadMetadata: ranges %+v, %v", got.Ranges, err)
	}
	plain := mustMarshal(t, BootstrapMLP(), BootstrapMetadata())
	for name, d := range map[string]Decider{"go": NewGoDecider(BootstrapMLP(), meta), "ort": loadCPU(t, b)} {
		res := make([]Decision, 2)
		if err := d.Decide([]State{in, out}, res); err != nil {
			t.Fatal(err)
		}
		if res[0].OutOfRange || !res[1].OutOfRange {
			t.Errorf("%s: out of range %v for a state inside, %v for one outside", name, res[0].OutOfRange, res[1].OutOfRange)
		}
		if res[0].Agreement != 1 {
			t.Errorf("%s: a single network's agreement is %v, want 1", name, res[0].Agreement)
		}
	}
	res := make([]Decision, 1)
	if err := loadCPU(t, plain).Decide([]State{out}, res); err != nil || res[0].OutOfRange {
		t.Errorf("a model without ranges: %+v, %v", res[0], err)
	}
}
