package bpf

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// ProfilerOptions configures OpenProfiler. The zero value profiles every
// process on every CPU at 19 Hz, on-CPU only.
type ProfilerOptions struct {
	// FrequencyHz is the per-CPU sampling frequency (default 19, like Parca:
	// a prime, so sampling does not lock step with periodic work).
	FrequencyHz int
	// PID restricts sampling to one process (tgid); 0 means every process.
	PID uint32
	// CgroupID restricts sampling to one cgroup v2 and its descendants;
	// CgroupLevel is its depth below the root (see CgroupFromPath).
	CgroupID    uint64
	CgroupLevel uint32
	// OffCPU also attaches the sched_switch off-CPU profiler.
	OffCPU bool
	// OffCPUHook forces one sched_switch flavour: "tp_btf", "raw_tp" or
	// "tracepoint"; "" tries them in that order and keeps the first that
	// loads and attaches.
	OffCPUHook string
	// OffCPUPreempted also records preempted tasks (time waiting in the run
	// queue). Off by default: on a busy machine most switches are
	// preemptions, and each recorded switch walks two stacks.
	OffCPUPreempted bool
	// MinBlock is the shortest off-CPU interval that is recorded (default 1ms):
	// most switches are shorter and recording them all would cost more than
	// they tell.
	MinBlock time.Duration
	// StackEntries bounds each stack trace map (default 8192 on-CPU, half of
	// that off-CPU); each entry costs 127*8 bytes of kernel memory.
	StackEntries uint32
	// CountEntries bounds each aggregation map (default 10240).
	CountEntries uint32

	// CopyUserStacks loads the copy-mode sampler: each sample of a process
	// not marked frame-pointer sound (SetFramePointerSound) sends the user
	// registers and the top StackCopyBytes of its user stack through a ring
	// buffer (read with CopyReader) for unwinding by .eh_frame in user
	// space, instead of being counted by frame pointer.
	CopyUserStacks bool
	// StackCopyBytes is how much user stack one sample copies (default
	// 16 KiB, at most 32 KiB; perf's --call-graph dwarf default is 8 KiB).
	StackCopyBytes uint32
	// CopyRingBytes sizes the ring buffer (a power of two, default 4 MiB of
	// kernel memory); a sample that finds it full is counted by frame
	// pointer instead (ProfileWindow.CopyFallbacks).
	CopyRingBytes uint32
	// FramePointerProcesses bounds the set of processes marked
	// frame-pointer sound (default 4096; least recently used dropped).
	FramePointerProcesses uint32
}

// Bounds and defaults of the sampler (PROFILER_COPY_MAX in
// profiler_common.h).
const (
	DefaultFrequencyHz    = 19
	MaxStackCopyBytes     = 32 << 10
	DefaultStackCopyBytes = 16 << 10
	defaultCopyRingBytes  = 4 << 20
)

func (o ProfilerOptions) withDefaults() ProfilerOptions {
	if o.FrequencyHz <= 0 {
		o.FrequencyHz = DefaultFrequencyHz
	}
	if o.MinBlock <= 0 {
		o.MinBlock = time.Millisecond
	}
	if o.StackEntries == 0 {
		o.StackEntries = 8192
	}
	if o.CountEntries == 0 {
		o.CountEntries = 10240
	}
	if o.StackCopyBytes == 0 {
		o.StackCopyBytes = DefaultStackCopyBytes
	}
	if o.CopyRingBytes == 0 {
		o.CopyRingBytes = defaultCopyRingBytes
	}
	if o.FramePointerProcesses == 0 {
		o.FramePointerProcesses = 4096
	}
	return o
}

// profilerFlagPreempted mirrors PROFILER_F_PREEMPTED in profiler_common.h.
const profilerFlagPreempted = 1

// Sentinel errors of the profiler.
var (
	ErrBadFrequency  = errors.New("sampling frequency out of range (1..10000 Hz)")
	ErrBadCopyOption = errors.New("bad stack copy option")
	ErrNoCopies      = errors.New("profiler not in stack copy mode")
	ErrNoOffCPUHook  = errors.New("no sched_switch hook could be attached (tp_btf, raw_tp, tracepoint)")
	ErrProfilerShut  = errors.New("profiler closed")
)

// StackSample is one aggregated (thread, cgroup, stacks) key of a window.
// Stacks are leaf first, as the kernel returns them. Value is a sample count
// for on-CPU and nanoseconds blocked for off-CPU.
type StackSample struct {
	Pid      uint32 // thread id
	Tgid     uint32 // process id
	CgroupID uint64
	Comm     string
	User     []uint64
	Kernel   []uint64
	// UserErr and KernelErr are the kernel's negative errno when a stack
	// could not be captured (e.g. -14 EFAULT: a kernel thread has no user
	// stack; -17 EEXIST: stack map hash collision) or -2 when the stack was
	// already evicted from the stack map; 0 otherwise.
	UserErr   int32
	KernelErr int32
	Value     uint64
}

// ProfileWindow is what one Drain returns.
type ProfileWindow struct {
	Start, End  time.Time
	FrequencyHz int
	OnCPU       []StackSample
	OffCPU      []StackSample
	// Lost counts samples dropped in kernel because an aggregation map was full.
	LostOnCPU, LostOffCPU uint64
	// CopyFallbacks counts copy-mode samples that found the ring buffer
	// full and were counted by frame pointer instead (they are in OnCPU).
	CopyFallbacks uint64
}

// Profiler owns the loaded sampler (and optionally the off-CPU program),
// their perf events and links. Not safe for concurrent Drain calls.
type Profiler struct {
	opts     ProfilerOptions
	on       *profilerCountMaps // the maps of whichever sampler is loaded
	sampler  *ebpf.Program
	fpObjs   *profilerFPObjects   // frame-pointer mode
	copyObjs *profilerCopyObjects // copy mode
	copies   *CopyReader
	off      *profilerOffcpuObjects
	offHook  string
	links    []link.Link
	gen      uint32
	start    time.Time
	onStacks *stackCache
	offStk   *stackCache
	closed   bool
}

// OpenProfiler loads the BPF programs, opens one cpu-clock perf event per
// online CPU and attaches the sampler to each.
func OpenProfiler(opts ProfilerOptions) (*Profiler, error) {
	opts = opts.withDefaults()
	if opts.FrequencyHz > 10000 {
		return nil, fmt.Errorf("%w: %d", ErrBadFrequency, opts.FrequencyHz)
	}
	p := &Profiler{opts: opts}
	spec, err := loadProfiler()
	if err != nil {
		return nil, err
	}
	spec.Maps[profilerMapProfileStacks].MaxEntries = opts.StackEntries
	spec.Maps[profilerMapProfileCounts0].MaxEntries = opts.CountEntries
	spec.Maps[profilerMapProfileCounts1].MaxEntries = opts.CountEntries
	if opts.CopyUserStacks {
		err = p.loadCopy(spec)
	} else {
		p.fpObjs = &profilerFPObjects{}
		if err = spec.LoadAndAssign(p.fpObjs, nil); err == nil {
			p.on, p.sampler = &p.fpObjs.profilerCountMaps, p.fpObjs.ProfileSample
		} else {
			p.fpObjs = nil
			err = fmt.Errorf("loading profile sampler: %w", err)
		}
	}
	if err != nil {
		return nil, err
	}
	p.onStacks = newStackCache(p.on.ProfileStacks, opts.StackEntries)
	if err := p.writeControl(p.on.ProfileControl); err != nil {
		p.Close()
		return nil, err
	}
	links, err := attachCPUClock(p.sampler, opts.FrequencyHz)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.links = append(p.links, links...)
	if opts.OffCPU {
		if err := p.attachOffCPU(); err != nil {
			p.Close()
			return nil, err
		}
	}
	p.start = time.Now() // the first window starts once everything is attached
	return p, nil
}

// OffCPUHook names the sched_switch flavour attached ("" when off-CPU is off).
func (p *Profiler) OffCPUHook() string { return p.offHook }

// Options returns the effective options (defaults filled in).
func (p *Profiler) Options() ProfilerOptions { return p.opts }

func (p *Profiler) writeControl(m *ebpf.Map) error {
	ctl := profilerProfilerControl{
		Gen:               p.gen,
		FilterTgid:        p.opts.PID,
		FilterCgroup:      p.opts.CgroupID,
		FilterCgroupLevel: p.opts.CgroupLevel,
		MinBlockNs:        uint64(p.opts.MinBlock.Nanoseconds()),
		CopyBytes:         p.opts.StackCopyBytes,
	}
	if p.opts.OffCPUPreempted {
		ctl.Flags |= profilerFlagPreempted
	}
	if err := m.Put(uint32(0), &ctl); err != nil {
		return fmt.Errorf("writing profiler control: %w", err)
	}
	return nil
}

// Drain flips the generation so new samples go to the other map, then reads
// and deletes the previous generation's counts and resolves their stacks.
func (p *Profiler) Drain() (*ProfileWindow, error) {
	if p.closed {
		return nil, ErrProfilerShut
	}
	old := p.gen & 1
	p.gen++
	if err := p.writeControl(p.on.ProfileControl); err != nil {
		return nil, err
	}
	if p.off != nil {
		if err := p.writeControl(p.off.OffcpuControl); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	w := &ProfileWindow{Start: p.start, End: now, FrequencyHz: p.opts.FrequencyHz}
	p.start = now
	// A sample that read the old generation just before the flip may still
	// be writing; a short pause lets it land so it is drained now, not later.
	time.Sleep(time.Millisecond)

	counts := p.on.ProfileCounts0
	if old == 1 {
		counts = p.on.ProfileCounts1
	}
	var err error
	if w.OnCPU, err = drainCounts(counts, p.onStacks); err != nil {
		return nil, fmt.Errorf("draining on-CPU counts: %w", err)
	}
	w.LostOnCPU = drainLost(p.on.ProfileLost)
	if p.copyObjs != nil {
		w.CopyFallbacks = drainLost(p.copyObjs.ProfileCopyFallback)
	}
	p.onStacks.maybeClear()
	if p.off != nil {
		counts := p.off.OffcpuCounts0
		if old == 1 {
			counts = p.off.OffcpuCounts1
		}
		if w.OffCPU, err = drainCounts(counts, p.offStk); err != nil {
			return nil, fmt.Errorf("draining off-CPU counts: %w", err)
		}
		w.LostOffCPU = drainLost(p.off.OffcpuLost)
		p.offStk.maybeClear()
	}
	return w, nil
}

// Stats reports the kernel run-time accounting of the sampler and, with
// off-CPU on, of the sched_switch program that attached.
func (p *Profiler) Stats() ([]ProgramStats, error) {
	type named struct {
		name string
		prog *ebpf.Program
	}
	name := profilerProgProfileSample
	if p.copyObjs != nil {
		name = profilerProgProfileSampleCopy
	}
	progs := []named{{name, p.sampler}}
	if p.off != nil {
		progs = append(progs,
			named{profilerOffcpuProgOffcpuSwitchBtf, p.off.OffcpuSwitchBtf},
			named{profilerOffcpuProgOffcpuSwitchRaw, p.off.OffcpuSwitchRaw},
			named{profilerOffcpuProgOffcpuSwitchTp, p.off.OffcpuSwitchTp})
	}
	var out []ProgramStats
	for _, pr := range progs {
		if pr.prog == nil {
			continue // an off-CPU flavour that was not loaded
		}
		s, err := programStats(pr.name, pr.prog)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Close detaches everything and frees the maps. Safe to call twice.
func (p *Profiler) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	p.links = nil
	if p.copies != nil {
		// The poller's descriptor first: its Close waits for a Wait in
		// flight to return, so no Wait asks the ring reader for its
		// pending bytes once that reader is closed (it has no ring then).
		if p.copies.ready != nil {
			errs = append(errs, p.copies.ready.Close())
		}
		errs = append(errs, p.copies.rd.Close())
	}
	if p.fpObjs != nil {
		errs = append(errs, p.fpObjs.ProfileSample.Close(), p.fpObjs.profilerCountMaps.Close())
	}
	if p.copyObjs != nil {
		errs = append(errs, p.copyObjs.Close())
	}
	if p.off != nil {
		errs = append(errs, p.off.Close())
	}
	return errors.Join(errs...)
}
