package profiling

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/flamegraph"
	"github.com/triage-agent/triage/flamegraph/unwind"
)

// FallbackRingFull is the fallback reason of copy-mode samples that found
// the kernel's ring buffer full and were counted by frame pointer.
const FallbackRingFull = "copy ring buffer full"

// copyAggregator unwinds copy-mode samples as they arrive (while their
// process still runs, so its mappings and files can be read) and counts
// them by (thread, stacks) until the window is collected.
type copyAggregator struct {
	sym  *flamegraph.Symbolizer
	prof *bpf.Profiler
	max  int // distinct stacks kept per window; more are counted as lost

	rd   *bpf.CopyReader
	busy atomic.Bool // a record read from the ring is being unwound

	mu        sync.Mutex
	counts    map[string]*flamegraph.Sample
	lost      uint64
	fallbacks map[string]uint64 // cumulative samples per reason, for /metrics
	starts    map[uint32]uint64 // tgid -> start time of the process last classified

	key []byte // scratch, used by the consumer goroutine only
	pcs []uint64
}

func newCopyAggregator(sym *flamegraph.Symbolizer, prof *bpf.Profiler, rd *bpf.CopyReader, max int) *copyAggregator {
	return &copyAggregator{sym: sym, prof: prof, rd: rd, max: max, counts: map[string]*flamegraph.Sample{},
		fallbacks: map[string]uint64{}, starts: map[uint32]uint64{}}
}

// run reads copies until the profiler closes. It waits for the ring in
// Go's network poller and drains it without blocking, so it never holds
// the agent's P in a system call (bpf.CopyReader.Wait says why).
func (a *copyAggregator) run() {
	var c bpf.StackCopy
	for {
		if err := a.rd.Wait(); err != nil {
			return // the profiler closed
		}
		for {
			a.busy.Store(true)
			err := a.rd.ReadNow(&c)
			if err == nil {
				a.add(&c)
			}
			a.busy.Store(false)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break // drained: wait for the next
			}
			if errors.Is(err, bpf.ErrProfilerShut) || errors.Is(err, os.ErrClosed) {
				return
			}
			// any other error is a malformed record: skip it
		}
	}
}

// catchUp waits, at most max, until the records in the ring buffer now have
// been unwound: a window's samples are then in that window even when the
// first sample of a process had to read its binaries' tables (hundreds of
// milliseconds for libc's debug file). It reports whether it caught up.
func (a *copyAggregator) catchUp(max time.Duration) bool {
	deadline := time.Now().Add(max)
	for a.rd.Pending() > 0 || a.busy.Load() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// maxClassified bounds the processes remembered as classified.
const maxClassified = 1 << 14

// add unwinds one sample and counts it.
func (a *copyAggregator) add(c *bpf.StackCopy) {
	if start, ok := a.starts[c.Tgid]; !ok || start != c.StartNs {
		// A process seen for the first time (or a new one behind a reused
		// pid): capture its mappings, and if all its code keeps frame
		// pointers let the kernel count it without copies from now on.
		if len(a.starts) >= maxClassified {
			clear(a.starts)
		}
		a.starts[c.Tgid] = c.StartNs
		a.sym.Forget(c.Tgid)
		if _, err := a.sym.Capture(c.Tgid); err == nil && a.sym.FramePointerSound(c.Tgid) {
			_ = a.prof.SetFramePointerSound(c.Tgid, c.StartNs)
		}
	}
	res := a.sym.UnwindUser(c.Tgid, unwind.Regs{PC: c.IP, SP: c.SP, BP: c.BP},
		unwind.Stack{Addr: c.SP, Data: c.Stack}, c.UserFP, a.pcs)
	a.pcs = res.PCs[:0]
	if res.Reason == flamegraph.FallbackJIT {
		a.sym.RefreshJIT(c.Tgid) // read the perf map while the process runs
	}
	k := a.key[:0]
	k = binary.LittleEndian.AppendUint32(k, c.Pid)
	k = binary.LittleEndian.AppendUint32(k, c.Tgid)
	k = binary.LittleEndian.AppendUint64(k, c.CgroupID)
	k = binary.LittleEndian.AppendUint32(k, uint32(len(res.PCs)))
	for _, pc := range res.PCs {
		k = binary.LittleEndian.AppendUint64(k, pc)
	}
	k = binary.LittleEndian.AppendUint32(k, uint32(len(c.Kernel)))
	for _, pc := range c.Kernel {
		k = binary.LittleEndian.AppendUint64(k, pc)
	}
	k = append(k, c.Comm...)
	k = append(k, 0)
	k = append(k, res.Reason...)
	k = append(k, 0)
	k = append(k, res.Module...)
	a.key = k

	a.mu.Lock()
	defer a.mu.Unlock()
	if res.Reason != "" {
		a.fallbacks[res.Reason]++
	}
	if s := a.counts[string(k)]; s != nil {
		s.Value++
		return
	}
	if len(a.counts) >= a.max {
		a.lost++
		return
	}
	a.counts[string(k)] = &flamegraph.Sample{
		Kind: flamegraph.OnCPU, Pid: c.Tgid, Tid: c.Pid, Comm: c.Comm, CgroupID: c.CgroupID,
		UserPCs: append([]uint64(nil), res.PCs...), KernelPCs: append([]uint64(nil), c.Kernel...),
		KernelMissing: missingReason(c.KernelErr),
		UnwindReason:  res.Reason, UnwindModule: res.Module, Value: 1,
	}
}

// take returns the window's samples and lost count, and starts a new window.
func (a *copyAggregator) take() ([]flamegraph.Sample, uint64) {
	a.mu.Lock()
	counts, lost := a.counts, a.lost
	a.counts, a.lost = make(map[string]*flamegraph.Sample, len(counts)), 0
	a.mu.Unlock()
	out := make([]flamegraph.Sample, 0, len(counts))
	for _, s := range counts {
		out = append(out, *s)
	}
	return out, lost
}

// noteRingFull counts samples the kernel counted by frame pointer because
// the ring buffer was full.
func (a *copyAggregator) noteRingFull(n uint64) {
	if n == 0 {
		return
	}
	a.mu.Lock()
	a.fallbacks[FallbackRingFull] += n
	a.mu.Unlock()
}

// fallbackCounts copies the cumulative per-reason counts.
func (a *copyAggregator) fallbackCounts() map[string]uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]uint64, len(a.fallbacks))
	for k, v := range a.fallbacks {
		out[k] = v
	}
	return out
}
