package train

import "testing"

func TestMostAtOnceCountsOneLevelsFinishedTasks(t *testing.T) {
	at := func(level int, start, finish float64, finished bool) Outcome {
		return Outcome{Level: level, StartMs: start, FinishMs: finish, Finished: finished, Started: true}
	}
	out := []Outcome{
		at(0, 0, 10, true),
		at(0, 10, 20, true), // starts as the first finishes: the same worker
		at(0, 5, 15, true),  // overlaps both
		at(4, 0, 20, true),  // another level
		at(0, 6, 30, false), // never finished
	}
	if got := MostAtOnce(out, 0); got != 2 {
		t.Errorf("level 0: %d at once, want 2", got)
	}
	if got := MostAtOnce(out, 4); got != 1 {
		t.Errorf("level 4: %d at once, want 1", got)
	}
	if got := MostAtOnce(out, 2); got != 0 {
		t.Errorf("level 2: %d at once, want 0", got)
	}
}
