package proc

import (
	"sync"
	"time"
)

// RSSSampler reads a process's resident set every interval until Stop, so
// that a benchmark can report its memory over a run and not only at one
// moment: an agent's resident set is a sawtooth (its heap grows between
// collections and is returned in steps), and a single reading at the end
// of a run lands anywhere on it.
type RSSSampler struct {
	stop chan struct{}
	done chan struct{}

	mu  sync.Mutex
	sum RSSSummary
	tot float64
}

// RSSSummary is what an RSSSampler read: the mean and the largest resident
// set over its readings, in bytes, and how many readings there were. A
// reading that failed (the process gone) is not counted.
type RSSSummary struct {
	Mean, Max int64
	Samples   int
}

// SampleRSS starts reading the resident set of pid (Self for this
// process) now and then every interval (at least a millisecond).
func SampleRSS(pid int, interval time.Duration) *RSSSampler {
	s := &RSSSampler{stop: make(chan struct{}), done: make(chan struct{})}
	interval = max(interval, time.Millisecond)
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.read(pid)
			select {
			case <-s.stop:
				s.read(pid) // the last reading, at the end of what was sampled
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *RSSSampler) read(pid int) {
	rss, _, err := procMemory(pid)
	if err != nil || rss <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum.Samples++
	s.tot += float64(rss)
	s.sum.Max = max(s.sum.Max, rss)
	s.sum.Mean = int64(s.tot / float64(s.sum.Samples))
}

// Stop ends the readings, takes a last one, and returns the summary.
// Calling it again returns the same summary.
func (s *RSSSampler) Stop() RSSSummary {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sum
}
