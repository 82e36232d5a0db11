package control

import (
	"math/rand/v2"
	"testing"
)

// Each controller's Preview answers what its Decide answers at that moment,
// and leaves it as it was: a controller that is asked Preview before every
// Decide decides exactly like a twin that is never asked, through a
// workload that moves between idle and overloaded (so intervals close,
// thresholds move and limits bind while previews are asked).
func TestPreviewIsDecideWithoutMovingTheController(t *testing.T) {
	for _, name := range Names {
		asked, _ := New(name)
		twin, _ := New(name)
		p, ok := asked.(Previewer)
		if !ok {
			t.Fatalf("%s does not implement Previewer", name)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		type flight struct {
			task          Task
			start, finish float64
		}
		var pending []flight
		shed, decided := 0, 0
		for now := 0.0; now < 20_000; now += 2 {
			// Queueing delay swings between none and 80 ms every 2 s.
			delay := 0.0
			if int(now/2000)%2 == 1 {
				delay = 80
			}
			for len(pending) > 0 && pending[0].finish <= now {
				f := pending[0]
				pending = pending[1:]
				asked.Observe(&f.task, f.start, f.finish)
				twin.Observe(&f.task, f.start, f.finish)
			}
			sla := []float64{10, 100, 300, 2000}[rng.IntN(4)]
			task := Task{ArrivalMs: now, SLAMs: sla, ExpectedMs: 1 + rng.Float64()*4}
			// Ask several times, as a table does for many cells.
			for range 3 {
				pl, pk := p.Preview(&task)
				other := Task{ArrivalMs: now, SLAMs: 5000, ExpectedMs: 2}
				p.Preview(&other)
				tl, tk := twin.Decide(&task)
				al, ak := asked.Decide(&task)
				if pl != tl || pk != tk || al != tl || ak != tk {
					t.Fatalf("%s at %v ms: preview (%d, %v), decide (%d, %v), twin's decide (%d, %v)", name, now, pl, pk, al, ak, tl, tk)
				}
				decided++
				if tl == 0 {
					shed++
				}
				start := now + delay
				pending = append(pending, flight{task, start, start + task.ExpectedMs})
			}
		}
		// The workload must have made the controller shed some and admit
		// some, or the comparison proved little.
		if shed == 0 || shed == decided {
			t.Fatalf("%s shed %d of %d tasks: the workload never moved it", name, shed, decided)
		}
		t.Logf("%s: %d of %d shed", name, shed, decided)
	}
}
