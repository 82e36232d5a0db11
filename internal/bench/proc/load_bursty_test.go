package proc

import (
	"errors"
	"testing"
	"time"
)

// Bursty spinners are runnable about their duty of the time, each on its
// own (two at 30% on a machine of two CPUs or more rarely wait for one).
func TestBurstyLoadRunsItsDuty(t *testing.T) {
	g, err := StartLoad(LoadConfig{Bursty: 2, BurstyDuty: 0.3, BurstMs: 5, Nice: 10, Name: "test-bursty"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	pids := g.PIDs()
	if len(pids) != 2 {
		t.Fatalf("%d processes, want 2 bursty spinners", len(pids))
	}
	before := make([]time.Duration, len(pids))
	for i, pid := range pids {
		u, err := ReadUsage(pid)
		if err != nil {
			t.Fatal(err)
		}
		before[i] = u.CPU
	}
	const wall = 2 * time.Second
	time.Sleep(wall)
	for i, pid := range pids {
		u, err := ReadUsage(pid)
		if err != nil {
			t.Fatal(err)
		}
		// 30% of 2 s is 600 ms; the machine may be shared and the bursts
		// are random, so ask for the right order only.
		if got := u.CPU - before[i]; got < wall/10 || got > wall*6/10 {
			t.Errorf("bursty spinner %d used %v of CPU in %v, want about 30%%", pid, got, wall)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d outlived Close", pid)
		}
	}
}

func TestBurstyLoadRefusesABadConfig(t *testing.T) {
	for _, cfg := range []LoadConfig{
		{Bursty: 1},
		{Bursty: 1, BurstyDuty: 1.5},
		{Bursty: -1, BurstyDuty: 0.5},
		{Bursty: 1, BurstyDuty: 0.5, BurstMs: -1},
		{Bursty: maxLoadProcs + 1, BurstyDuty: 0.5},
	} {
		if g, err := StartLoad(cfg); !errors.Is(err, ErrBadConfig) {
			g.Close()
			t.Errorf("%+v: %v, want ErrBadConfig", cfg, err)
		}
	}
}
