package proc

import (
	"syscall"
	"testing"
	"time"
)

func TestRSSSamplerSeesAGrowthBetweenReadings(t *testing.T) {
	before, err := ReadUsage(Self)
	if err != nil {
		t.Fatal(err)
	}
	s := SampleRSS(Self, time.Millisecond)
	// 48 MiB mapped outside the Go heap, so that they are resident only
	// from their first touch: heap memory could be pages an earlier test
	// (or -count) left resident, and no growth would show.
	buf, err := syscall.Mmap(-1, 0, 48<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(buf)
	for i := 0; i < len(buf); i += 4096 { // touch every page: resident now
		buf[i] = 1
	}
	// Wait until a reading has seen the pages.
	deadline := time.Now().Add(10 * time.Second)
	for s.summary().Max < before.RSS+32<<20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	sum := s.Stop()
	t.Logf("before %d MiB; readings %d, mean %d MiB, max %d MiB", before.RSS>>20, sum.Samples, sum.Mean>>20, sum.Max>>20)
	if sum.Samples < 2 {
		t.Errorf("%d readings, want at least 2 (one at start, one at Stop)", sum.Samples)
	}
	if sum.Max < before.RSS+32<<20 {
		t.Errorf("max %d MiB: the 48 MiB touched between readings were not seen (before %d MiB)", sum.Max>>20, before.RSS>>20)
	}
	if sum.Mean <= 0 || sum.Mean > sum.Max {
		t.Errorf("mean %d, max %d: want 0 < mean <= max", sum.Mean, sum.Max)
	}
	if again := s.Stop(); again != sum {
		t.Errorf("a second Stop gave %+v, the first %+v", again, sum)
	}
}

func TestRSSSamplerOfAProcessThatIsGoneCountsNothing(t *testing.T) {
	// pid_max is at most 2^22 on Linux: this pid never exists.
	s := SampleRSS(1<<23, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if sum := s.Stop(); sum != (RSSSummary{}) {
		t.Errorf("readings of no process: %+v, want none", sum)
	}
}

// A run shorter than the interval still has its start and its end read.
func TestRSSSamplerReadsAtStartAndAtStop(t *testing.T) {
	s := SampleRSS(Self, time.Hour)
	sum := s.Stop()
	if sum.Samples != 2 || sum.Mean <= 0 || sum.Max < sum.Mean {
		t.Errorf("a sampler stopped before its first tick: %+v, want 2 readings, 0 < mean <= max", sum)
	}
}
