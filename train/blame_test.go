package train

import (
	"math"
	"testing"
)

// One worker: a long background-ish task starts on an idle node, and an
// urgent one arrives right behind it and misses its SLA waiting. The whole
// loss of the urgent task is the long task's blame; nobody blames the
// urgent one, which held the worker while no one waited.
func TestBlameGoesToTheTaskThatHeldTheWorker(t *testing.T) {
	sc := mustParseScenario(t, `{"name":"blame","seed":1,"duration_s":1,"workers":1,
	 "arrival":{"process":"poisson","rate_per_s":1},
	 "classes":[{"name":"a","share":1,"sla_ms":20,"cost_ms":{"dist":"exponential","mean":1}}]}`)
	tasks := []Task{
		{ID: 0, ArrivalMs: 0, Class: 0, CostMs: 100, ExpectedMs: 100, SLAMs: 1000, Weight: 1},
		{ID: 1, ArrivalMs: 1, Class: 0, CostMs: 1, ExpectedMs: 1, SLAMs: 20, Weight: 1},
		{ID: 2, ArrivalMs: 500, Class: 0, CostMs: 1, ExpectedMs: 1, SLAMs: 20, Weight: 1},
	}
	out, err := RunTasks(sc, tasks, constLevel(2), SimConfig{TrackBlame: true})
	if err != nil {
		t.Fatal(err)
	}
	if out[1].Met || !out[2].Met {
		t.Fatalf("setup: urgent task met=%v, the later one met=%v", out[1].Met, out[2].Met)
	}
	loss := waitLoss(&out[1], 0)
	w := PhaseWeights[out[1].Phase]
	if want := w.SLA + w.Lat*(LatencyPenalty(1, 20)-LatencyPenalty(100, 20)); math.Abs(loss-want) > 1e-9 {
		t.Fatalf("loss of the blocked task %.6f, want %.6f", loss, want)
	}
	if math.Abs(out[0].Blame-loss) > 1e-9 {
		t.Errorf("blocker's blame %.6f, want the blocked task's whole loss %.6f", out[0].Blame, loss)
	}
	if out[1].Blame != 0 || out[2].Blame != 0 {
		t.Errorf("tasks that blocked no one were blamed: %v, %v", out[1].Blame, out[2].Blame)
	}
}

// Blame is shared by how long each blocker held a worker during the wait,
// and it adds up to the total loss: nothing is created or dropped.
func TestBlameIsSharedAndConserved(t *testing.T) {
	sc, err := LoadScenario("../testdata/scenarios/train-a-overload.json")
	if err != nil {
		t.Fatal(err)
	}
	sc = capDuration(sc, 10)
	out, err := Run(sc, NewStaticClass(sc), SimConfig{TrackBlame: true})
	if err != nil {
		t.Fatal(err)
	}
	end := sc.DurationS * 1000
	for i := range out {
		end = math.Max(end, out[i].DeadlineMs())
	}
	var blame, loss float64
	blamed := 0
	for i := range out {
		if out[i].Blame < 0 {
			t.Fatalf("task %d has negative blame %v", i, out[i].Blame)
		}
		if out[i].Blame > 0 {
			blamed++
		}
		blame += out[i].Blame
		if out[i].Started && out[i].StartMs > out[i].ArrivalMs || !out[i].Started {
			loss += waitLoss(&out[i], end)
		}
	}
	if loss == 0 || blamed < 10 {
		t.Fatalf("overload produced no waiting losses (loss %v, %d blamed)", loss, blamed)
	}
	if math.Abs(blame-loss) > 1e-6*loss {
		t.Fatalf("blame %.6f does not add up to the losses %.6f", blame, loss)
	}
}
