package state

import (
	"testing"
	"time"
)

// The assembler says how long the foreground has been gone: since it
// started while no task has been decided at priorities 1–4, then since the
// latest such task, the agent's own decisions and the clients' reported
// local ones alike; background decisions do not count.
func TestAssemblerForegroundIdle(t *testing.T) {
	a := NewAssembler(Config{Workers: 4})
	t0 := a.start
	if fg := a.Foreground(t0.Add(3 * time.Second)); fg.IdleMs != 3000 || fg.Workers != 0 {
		t.Fatalf("nothing decided: %+v, want 3000 ms idle and no load", fg)
	}
	a.ObserveLevel(t0.Add(4*time.Second), 0, 100, 2000)
	if fg := a.Foreground(t0.Add(5 * time.Second)); fg.IdleMs != 5000 {
		t.Fatalf("after a background decision: %+v, want 5000 ms idle", fg)
	}
	a.ObserveLevel(t0.Add(6*time.Second), 4, 500, 20)
	fg := a.Foreground(t0.Add(6*time.Second + 250*time.Millisecond))
	if fg.IdleMs != 250 || fg.Workers != 0.5 {
		t.Fatalf("a quarter second after a foreground task of 500 ms: %+v, want 250 ms idle, half a worker", fg)
	}
	if fg := a.Foreground(t0.Add(20 * time.Second)); fg.IdleMs != 14000 || fg.Workers != 0 {
		t.Fatalf("14 s on: %+v, want 14000 ms idle and no load", fg)
	}
}
