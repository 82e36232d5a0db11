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
	n   int     // readings taken
	tot float64 // their sum, bytes
	max int64
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
	s.n++
	s.tot += float64(rss)
	s.max = max(s.max, rss)
}

// summary is the readings so far.
func (s *RSSSampler) summary() RSSSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return RSSSummary{}
	}
	return RSSSummary{Mean: int64(s.tot / float64(s.n)), Max: s.max, Samples: s.n}
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
	return s.summary()
}
