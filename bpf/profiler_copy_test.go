package bpf

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestProfilerCopiesUserStacks samples this process in copy mode: records
// carry its registers, a user stack copy that starts at SP, and the
// kernel's frame-pointer walk; once the process is marked frame-pointer
// sound its samples are counted instead of copied.
func TestProfilerCopiesUserStacks(t *testing.T) {
	requireBPF(t)
	self := uint32(os.Getpid())
	p := mustOpen(t, OpenProfiler, ProfilerOptions{FrequencyHz: 499, PID: self, CopyUserStacks: true, StackCopyBytes: 8192})
	rd, err := p.CopyReader()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { spin(400 * time.Millisecond); close(done) }()
	var c StackCopy
	got, withStack := 0, 0
	var startNs uint64
	for deadline := time.Now().Add(15 * time.Second); got < 40 && time.Now().Before(deadline); {
		rd.SetDeadline(time.Now().Add(200 * time.Millisecond))
		if err := rd.Read(&c); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			t.Fatalf("Read: %v", err)
		}
		got++
		if c.Tgid != self {
			t.Fatalf("pid filter leaked tgid %d (%s)", c.Tgid, c.Comm)
		}
		if c.SP == 0 || c.IP == 0 || c.StartNs == 0 {
			t.Fatalf("record without registers: %+v", c)
		}
		if len(c.Stack) > 8192 {
			t.Fatalf("stack copy of %d bytes with a limit of 8192", len(c.Stack))
		}
		if len(c.Stack) > 0 {
			withStack++
		}
		// Both come from the same saved user registers, whether the
		// sample hit user code or a syscall.
		if len(c.UserFP) == 0 || c.UserFP[0] != c.IP {
			t.Fatalf("user frame-pointer walk %x does not start at ip 0x%x", c.UserFP, c.IP)
		}
		startNs = c.StartNs
	}
	<-done
	if got < 40 || withStack < got/2 {
		t.Fatalf("%d records, %d with stack bytes; want >= 40, most with bytes", got, withStack)
	}
	// Marked frame-pointer sound: counted by the kernel, no more copies.
	if err := p.SetFramePointerSound(self, startNs); err != nil {
		t.Fatal(err)
	}
	for rd.SetDeadline(time.Now().Add(50 * time.Millisecond)); rd.Read(&c) == nil; rd.SetDeadline(time.Now().Add(50 * time.Millisecond)) {
	}
	mustDrain(t, p)
	spin(200 * time.Millisecond)
	counted := drainOnCPU(t, p)
	rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if err := rd.Read(&c); err == nil {
		t.Fatalf("a copy arrived after the process was marked frame-pointer sound: %+v", c.Pid)
	}
	if counted < 20 {
		t.Fatalf("only %d counted samples after the mark", counted)
	}
	st, err := p.Stats()
	if err != nil || len(st) != 1 || st[0].Name != "profile_sample_copy" {
		t.Fatalf("stats %+v, %v", st, err)
	}
}

func TestProfilerCopyOptions(t *testing.T) {
	requireBPF(t)
	if _, err := OpenProfiler(ProfilerOptions{CopyUserStacks: true, StackCopyBytes: MaxStackCopyBytes + 1}); !errors.Is(err, ErrBadCopyOption) {
		t.Fatalf("copy over the max: %v", err)
	}
	if _, err := OpenProfiler(ProfilerOptions{CopyUserStacks: true, CopyRingBytes: 3 << 20}); !errors.Is(err, ErrBadCopyOption) {
		t.Fatalf("ring not a power of two: %v", err)
	}
	p := mustOpen(t, OpenProfiler, ProfilerOptions{PID: uint32(os.Getpid())})
	if _, err := p.CopyReader(); !errors.Is(err, ErrNoCopies) {
		t.Fatalf("frame-pointer mode has a copy reader: %v", err)
	}
}

// Wait parks in Go's network poller until the ring holds a record, ReadNow
// drains without waiting, and once the profiler closes Wait returns
// ErrProfilerShut (the reader's loop ends rather than spinning).
func TestCopyReaderWaitThenReadNow(t *testing.T) {
	requireBPF(t)
	self := uint32(os.Getpid())
	p, rd := openCopyReader(t, 499)
	if rd.ready == nil {
		p.Close()
		t.Fatal("the ring buffer's descriptor did not join the network poller (every kernel with ring buffers polls them)")
	}
	go spin(300 * time.Millisecond)
	var c StackCopy
	got := 0
	for deadline := time.Now().Add(15 * time.Second); got < 20 && time.Now().Before(deadline); {
		if err := rd.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if rd.Pending() == 0 {
			t.Fatal("Wait returned with an empty ring")
		}
		if got == 0 {
			// With records waiting Wait returns at once, and it runs for
			// every burst: it must not allocate.
			if n := testing.AllocsPerRun(20, func() { _ = rd.Wait() }); n != 0 {
				t.Fatalf("Wait with records waiting: %v allocations, want 0", n)
			}
		}
		for {
			err := rd.ReadNow(&c)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				t.Fatalf("ReadNow: %v", err)
			}
			if c.Tgid != self {
				t.Fatalf("pid filter leaked tgid %d", c.Tgid)
			}
			got++
		}
	}
	if got < 20 {
		t.Fatalf("%d records through Wait and ReadNow, want 20 or more", got)
	}
	waited := make(chan error, 1)
	go func() {
		for {
			if err := rd.Wait(); err != nil {
				waited <- err
				return
			}
			for rd.ReadNow(&c) == nil {
			}
		}
	}()
	time.Sleep(50 * time.Millisecond) // parked, the process no longer spinning
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		if !errors.Is(err, ErrProfilerShut) {
			t.Fatalf("Wait after Close: %v, want ErrProfilerShut", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after the profiler closed")
	}
	if err := rd.Wait(); !errors.Is(err, ErrProfilerShut) {
		t.Fatalf("Wait on a closed profiler: %v, want ErrProfilerShut", err)
	}
}

// Closing the profiler while its reader wakes and drains, over and over,
// never lets a Wait ask the closed ring reader for its pending bytes (a
// nil dereference in cilium/ebpf when the reader was closed first).
func TestCopyReaderClosesWhileReading(t *testing.T) {
	requireBPF(t)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // samples keep coming
		for {
			select {
			case <-stop:
				return
			default:
				spin(5 * time.Millisecond)
			}
		}
	}()
	for i := 0; i < 20; i++ {
		p, rd := openCopyReader(t, 999)
		done := make(chan struct{})
		go func() {
			defer close(done)
			var c StackCopy
			for rd.Wait() == nil {
				for rd.ReadNow(&c) == nil {
				}
			}
		}()
		time.Sleep(time.Duration(i%5) * time.Millisecond)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the reader did not stop after Close", i)
		}
	}
}

// openCopyReader opens a copy-mode profiler of this process at hz and its
// reader; the caller closes the profiler (the tests check that Close).
func openCopyReader(t *testing.T, hz int) (*Profiler, *CopyReader) {
	t.Helper()
	p, err := OpenProfiler(ProfilerOptions{FrequencyHz: hz, PID: uint32(os.Getpid()), CopyUserStacks: true, StackCopyBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := p.CopyReader()
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p, rd
}
