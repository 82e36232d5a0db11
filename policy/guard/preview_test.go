package guard

import (
	"testing"

	"github.com/triage-agent/triage/policy"
	"github.com/triage-agent/triage/policy/control"
)

// Preview answers what Decide answers, sure or unsure, and never counts
// the task: gradient2 at its limit of two still admits after any number
// of previews, and sheds once two real tasks are in flight.
func TestPreviewAnswersLikeDecideWithoutCounting(t *testing.T) {
	g, err := New(tightGradient2(), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !g.CanPreview() {
		t.Fatal("gradient2 cannot preview")
	}
	for i := range 10 {
		for _, d := range []policy.Decision{sure, disputed, outside} {
			level, why, ok := g.Preview(normalTask(float64(i)), &d)
			wantLevel, wantWhy := 2, g.Unsure(&d)
			if wantWhy == Network {
				wantLevel = d.Priority
			}
			if !ok || level != wantLevel || why != wantWhy {
				t.Fatalf("preview %d of %+v: level %d reason %s ok %v, want %d %s", i, d, level, why, ok, wantLevel, wantWhy)
			}
		}
	}
	g.Decide(normalTask(20), &sure)
	g.Decide(normalTask(21), &sure)
	if level, why, _ := g.Preview(normalTask(22), &disputed); level != 0 || why != Disagree {
		t.Fatalf("over the limit: preview %d %s, want the controller's 0", level, why)
	}
	if level, _ := g.Decide(normalTask(22), &disputed); level != 0 {
		t.Fatalf("decide after the preview: %d, want 0", level)
	}
}

// noPreview is a controller without Preview: the guard previews only the
// network's sure decisions.
type noPreview struct{ control.Controller }

func TestPreviewWithoutAPreviewer(t *testing.T) {
	g, err := New(noPreview{tightGradient2()}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if g.CanPreview() {
		t.Fatal("CanPreview true for a controller without Preview")
	}
	if level, why, ok := g.Preview(normalTask(0), &sure); !ok || level != 3 || why != Network {
		t.Fatalf("sure: %d %s %v", level, why, ok)
	}
	if _, why, ok := g.Preview(normalTask(0), &disputed); ok || why != Disagree {
		t.Fatalf("unsure: reason %s ok %v, want Disagree and not ok", why, ok)
	}
}
