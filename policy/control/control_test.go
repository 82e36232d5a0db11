package control

import "testing"

// feed runs a steady stream for durMs: one urgent and one normal task every
// stepMs, each finishing delayMs+1 ms after it arrived (a queueing delay of
// delayMs and a 1 ms service), and returns the levels decided for the
// normal tasks in the last half. pending carries the tasks still in flight
// from one call to the next.
func feed(c Controller, pending *[]Task, fromMs, durMs, stepMs, delayMs float64) []int {
	var levels []int
	for now := fromMs; now < fromMs+durMs; now += stepMs {
		for len(*pending) > 0 && (*pending)[0].ArrivalMs+(*pending)[0].ExpectedMs <= now {
			p := (*pending)[0]
			*pending = (*pending)[1:]
			finish := p.ArrivalMs + p.ExpectedMs
			p.ExpectedMs = 1
			c.Observe(&p, finish-1, finish)
		}
		u := Task{ArrivalMs: now, SLAMs: 10, ExpectedMs: 1}
		n := Task{ArrivalMs: now, SLAMs: 1000, ExpectedMs: 1}
		if lu, _ := c.Decide(&u); lu != 4 {
			panic("an urgent task was not given priority 4")
		}
		ln, _ := c.Decide(&n)
		if now >= fromMs+durMs/2 {
			levels = append(levels, ln)
		}
		// ExpectedMs carries the time in flight until the task finishes.
		u.ExpectedMs, n.ExpectedMs = delayMs+1, delayMs+1
		*pending = append(*pending, u, n)
	}
	return levels
}

func shedShare(levels []int) float64 {
	shed := 0
	for _, l := range levels {
		if l == 0 {
			shed++
		}
	}
	return float64(shed) / float64(len(levels))
}

// Every controller admits normal work while queueing delay is low, sheds
// it once delay stands high, and admits it again when delay falls.
func TestControllersFollowQueueingDelay(t *testing.T) {
	for _, name := range Names {
		c, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		var pending []Task
		low := shedShare(feed(c, &pending, 0, 5000, 5, 0))
		// gradient2 reads latency over cost: 100 ms of queueing is 100x.
		high := shedShare(feed(c, &pending, 5000, 5000, 5, 100))
		again := shedShare(feed(c, &pending, 10000, 20000, 5, 0))
		t.Logf("%s: shed %.2f at no delay, %.2f at 100 ms, %.2f after", name, low, high, again)
		if low > 0 || high < 0.5 || again > 0.1 {
			t.Errorf("%s: shed %.2f at no delay (want 0), %.2f at 100 ms (want ≥ 0.5), %.2f once the delay is gone (want ≤ 0.1)", name, low, high, again)
		}
	}
}

func TestCoDelKeysNewestFirstWhileOverloaded(t *testing.T) {
	c := NewCoDelLIFO(DefaultCoDelLIFO)
	var pending []Task
	feed(c, &pending, 0, 2000, 5, 50)
	if _, key := c.Decide(&Task{ArrivalMs: 2000, SLAMs: 10}); key != -2000 {
		t.Errorf("urgent key %v while overloaded, want -arrival", key)
	}
	c.Reset()
	if _, key := c.Decide(&Task{ArrivalMs: 10, SLAMs: 10}); key != 20 {
		t.Errorf("after Reset: key %v, want the deadline", key)
	}
}

func TestUnknownController(t *testing.T) {
	if _, err := New("pid"); err == nil {
		t.Fatal("an unknown controller name was accepted")
	}
}
