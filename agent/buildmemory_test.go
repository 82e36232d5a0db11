package agent

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestBuildMemoryReturnsOnceForABurstOfLargeBuilds(t *testing.T) {
	var frees atomic.Int32
	done := make(chan struct{}, 4)
	b := &buildMemory{free: func() { frees.Add(1); done <- struct{}{} }, delay: 20 * time.Millisecond}
	b.afterBuild(largeBuildBytes - 1) // small: left to the scavenger
	for i := 0; i < 5; i++ {
		b.afterBuild(largeBuildBytes)
	}
	<-done
	time.Sleep(50 * time.Millisecond) // time for a second, wrong, return
	if n := frees.Load(); n != 1 {
		t.Fatalf("%d returns for one burst of builds, want 1", n)
	}
	// A later large build schedules its own.
	b.afterBuild(largeBuildBytes << 2)
	<-done
	if n := frees.Load(); n != 2 {
		t.Fatalf("%d returns after a second burst, want 2", n)
	}
	b.afterBuild(1 << 20)
	time.Sleep(50 * time.Millisecond)
	if n := frees.Load(); n != 2 {
		t.Fatalf("a small build returned memory (%d returns)", n)
	}
}
