package profiling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/pprof/profile"

	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/flamegraph"
)

// Config configures New; the zero value profiles every process at 19 Hz,
// on-CPU only, with default map and cache bounds, unwinding by tables where
// the kernel allows it.
type Config struct {
	Profiler   bpf.ProfilerOptions
	Symbolizer flamegraph.SymbolizerConfig
	// Unwind chooses how user stacks are walked: UnwindAuto (the default),
	// UnwindTables or UnwindFramePointers. Profiler.CopyUserStacks is set
	// from it.
	Unwind UnwindMode
	Logger *slog.Logger
	// BeforeWindow, when set, is called by Run before each window is
	// collected, and AfterWindow after it is written (also when writing
	// failed): the agent may give the window more Ps between the two
	// (--window-max-procs) and hands the window's garbage back to the OS
	// in the second.
	BeforeWindow, AfterWindow func()
}

// UnwindMode is how user stacks are walked.
type UnwindMode string

const (
	// UnwindAuto copies user stacks and unwinds them by .eh_frame where the
	// kernel loads the copying sampler, else walks frame pointers (and says
	// so in the log and in every profile's comments).
	UnwindAuto UnwindMode = ""
	// UnwindTables copies user stacks and unwinds them by .eh_frame /
	// .debug_frame in user space (frame pointers for Go code and where no
	// table covers), like perf --call-graph dwarf; New fails if the kernel
	// refuses the copying sampler.
	UnwindTables UnwindMode = "dwarf"
	// UnwindFramePointers is the kernel's frame-pointer walk only: the
	// cheapest, and the whole truth for code that keeps frame pointers.
	UnwindFramePointers UnwindMode = "fp"
)

// ParseUnwindMode reads a --unwind value: auto, dwarf (or tables), fp.
func ParseUnwindMode(s string) (UnwindMode, error) {
	switch s {
	case "", "auto":
		return UnwindAuto, nil
	case "dwarf", "tables":
		return UnwindTables, nil
	case "fp", "frame-pointers":
		return UnwindFramePointers, nil
	}
	return "", fmt.Errorf("unknown unwind mode %q (auto, dwarf, fp)", s)
}

// Recorder owns a loaded profiler and a symboliser.
type Recorder struct {
	prof *bpf.Profiler
	sym  *flamegraph.Symbolizer
	log  *slog.Logger
	// copies is nil in frame-pointer mode.
	copies     *copyAggregator
	copiesDone chan struct{}
	// unwindNote goes into every profile's comments: how stacks were walked.
	unwindNote                string
	beforeWindow, afterWindow func() // Config.BeforeWindow, Config.AfterWindow
}

// Result is one drained, symbolised window.
type Result struct {
	Window flamegraph.Window
	OnCPU  *profile.Profile // nil when the window had no on-CPU samples
	OffCPU *profile.Profile // nil unless off-CPU profiling is on and saw blocks
	// Lost counts samples the kernel maps had no room for.
	Lost uint64
}

// New loads and attaches the profiler.
func New(cfg Config) (*Recorder, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	// The symboliser first: reading kallsyms takes a moment that should not
	// be part of the first window.
	sym := flamegraph.NewSymbolizer(cfg.Symbolizer)
	if err := sym.KernelErr(); err != nil {
		log.Warn("kernel frames will not be named", "err", err)
	}
	opts := cfg.Profiler
	opts.CopyUserStacks = cfg.Unwind != UnwindFramePointers
	p, err := bpf.OpenProfiler(opts)
	note := ""
	if err != nil && cfg.Unwind == UnwindAuto {
		// Older kernels (no bpf_task_pt_regs, no ring buffer): the
		// frame-pointer sampler still works.
		log.Warn("copying user stacks unavailable; unwinding by frame pointers only", "err", err)
		note = fmt.Sprintf("unwind: frame pointers only (stack copy unavailable: %v)", err)
		opts.CopyUserStacks = false
		p, err = bpf.OpenProfiler(opts)
	}
	if err != nil {
		return nil, fmt.Errorf("starting profiler: %w", err)
	}
	r := &Recorder{prof: p, sym: sym, log: log, unwindNote: note, beforeWindow: cfg.BeforeWindow, afterWindow: cfg.AfterWindow}
	if rd, err := p.CopyReader(); err == nil {
		o := p.Options()
		r.unwindNote = fmt.Sprintf("unwind: .eh_frame/.debug_frame tables on %d KiB user stack copies; frame pointers for Go and where no table covers", o.StackCopyBytes>>10)
		r.copies = newCopyAggregator(sym, p, rd, int(o.CountEntries))
		r.copiesDone = make(chan struct{})
		go func() {
			defer close(r.copiesDone)
			r.copies.run()
		}()
	} else if r.unwindNote == "" {
		r.unwindNote = "unwind: frame pointers only (--unwind fp)"
	}
	return r, nil
}

// SymbolCacheBytes is the symboliser's cache now (symbol tables, inline
// indexes, unwind tables, JIT maps).
func (r *Recorder) SymbolCacheBytes() int { return r.sym.CacheBytes() }

// KernelSymbolReads is how many times the symboliser read /proc/kallsyms.
func (r *Recorder) KernelSymbolReads() uint64 { return r.sym.KernelSymbolReads() }

// UnwindsByTables reports whether user stacks are copied and unwound by
// tables (false: frame pointers only).
func (r *Recorder) UnwindsByTables() bool { return r.copies != nil }

// UnwindFallbacks counts, since the start, the samples whose user stack was
// partly walked by frame pointer where tables were wanted, per reason (the
// flamegraph.Fallback* reasons and FallbackRingFull).
func (r *Recorder) UnwindFallbacks() map[string]uint64 {
	if r.copies == nil {
		return map[string]uint64{}
	}
	return r.copies.fallbackCounts()
}

// OffCPUHook names the attached sched_switch flavour ("" when off).
func (r *Recorder) OffCPUHook() string { return r.prof.OffCPUHook() }

// Symbolizer exposes the recorder's symboliser (its caches persist across
// windows).
func (r *Recorder) Symbolizer() *flamegraph.Symbolizer { return r.sym }

// CaptureLive captures the mappings of the processes seen so far in the
// current window, and of none twice. Call it every second or so while a
// window fills (Wait does); short-lived processes are then still named.
func (r *Recorder) CaptureLive() {
	pids, err := r.prof.ActivePIDs()
	if err != nil {
		return
	}
	for _, pid := range pids {
		if r.sym.Process(pid) == nil {
			_, _ = r.sym.Capture(pid)
		}
	}
}

// Wait lets the window fill for d (or until ctx ends), capturing live
// processes' mappings every captureEvery.
func (r *Recorder) Wait(ctx context.Context, d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(captureEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
			r.CaptureLive()
		}
	}
}

// captureEvery is how often Wait looks for new processes: often enough to
// catch a process that lives a few seconds, rare enough to cost nothing.
const captureEvery = time.Second

// copyCatchUp bounds how long Collect waits for queued stack copies to be
// unwound.
const copyCatchUp = 10 * time.Second

// Collect drains the current window and builds its profiles.
func (r *Recorder) Collect() (*Result, error) {
	w, err := r.prof.Drain()
	if err != nil {
		return nil, err
	}
	// Capture mappings now, while the processes (probably) still run.
	seen := map[uint32]bool{}
	for _, list := range [][]bpf.StackSample{w.OnCPU, w.OffCPU} {
		for i := range list {
			if pid := list[i].Tgid; !seen[pid] {
				seen[pid] = true
				_, _ = r.sym.Capture(pid) // an exited process keeps module+offset frames
			}
		}
	}
	res := &Result{
		Window: flamegraph.Window{Start: w.Start, End: w.End, FrequencyHz: w.FrequencyHz},
		Lost:   w.LostOnCPU + w.LostOffCPU,
	}
	onCPU := Convert(w.OnCPU, flamegraph.OnCPU)
	comments := []string{r.unwindNote}
	if r.copies != nil {
		if !r.copies.catchUp(copyCatchUp) {
			r.log.Warn("stack copies still queued at the end of the window; they go to the next one", "waited", copyCatchUp)
		}
		copied, lost := r.copies.take()
		onCPU = append(onCPU, copied...)
		res.Lost += lost
		r.copies.noteRingFull(w.CopyFallbacks)
		if w.CopyFallbacks > 0 {
			comments = append(comments, fmt.Sprintf("unwind: frame pointers used (%s) in %d samples", FallbackRingFull, w.CopyFallbacks))
		}
	}
	opts := flamegraph.BuildOptions{Window: res.Window, Symbolizer: r.sym, Comments: comments}
	if len(onCPU) > 0 {
		if res.OnCPU, err = flamegraph.BuildProfile(onCPU, opts); err != nil {
			return nil, err
		}
	}
	if len(w.OffCPU) > 0 {
		// The off-CPU program walks stacks when a task blocks, by frame
		// pointer: its stacks are not copied.
		opts.Comments = []string{"unwind: frame pointers (off-CPU stacks are walked by the kernel at sched_switch)"}
		if res.OffCPU, err = flamegraph.BuildProfile(Convert(w.OffCPU, flamegraph.OffCPU), opts); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Convert turns drained BPF samples into flamegraph samples.
func Convert(in []bpf.StackSample, kind flamegraph.Kind) []flamegraph.Sample {
	out := make([]flamegraph.Sample, 0, len(in))
	for i := range in {
		s := &in[i]
		out = append(out, flamegraph.Sample{
			Kind: kind, Pid: s.Tgid, Tid: s.Pid, Comm: s.Comm, CgroupID: s.CgroupID,
			UserPCs: s.User, KernelPCs: s.Kernel,
			UserMissing:   missingReason(s.UserErr),
			KernelMissing: missingReason(s.KernelErr),
			Value:         int64(s.Value),
		})
	}
	return out
}

// missingReason says why a stack is absent, or "" when absence is normal:
// see the EFAULT case.
func missingReason(errno int32) string {
	switch {
	case errno == 0:
		return ""
	case errno == -14:
		return "" // EFAULT: a sample taken in user mode has no kernel stack, a kernel thread no user stack
	case errno == -17:
		return "lost: stack map collision"
	case errno == -2:
		return "evicted"
	case errno == -12:
		return "lost: stack map full"
	default:
		return fmt.Sprintf("unavailable (errno %d)", -errno)
	}
}

// Run writes a window into store every interval until ctx ends; a window that
// fails to build or write is logged and skipped, never fatal.
func (r *Recorder) Run(ctx context.Context, store *flamegraph.Store, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Minute
	}
	for {
		r.Wait(ctx, interval)
		if ctx.Err() != nil {
			return nil
		}
		if r.beforeWindow != nil {
			r.beforeWindow()
		}
		err := r.SaveWindow(store)
		if r.afterWindow != nil {
			r.afterWindow()
		}
		if errors.Is(err, bpf.ErrProfilerShut) {
			return err
		}
		if err != nil {
			r.log.Warn("flame graph window", "err", err)
		}
	}
}

// SaveWindow collects one window and writes its profiles into store.
func (r *Recorder) SaveWindow(store *flamegraph.Store) error {
	res, err := r.Collect()
	if err != nil {
		return err
	}
	var errs []error
	if res.OnCPU != nil {
		if _, err := store.Save(res.Window.End, "cpu", res.OnCPU, flamegraph.SVGOptions{Title: "On-CPU " + res.Window.End.UTC().Format(time.RFC3339)}); err != nil {
			errs = append(errs, err)
		}
	}
	if res.OffCPU != nil {
		if _, err := store.Save(res.Window.End, "offcpu", res.OffCPU, flamegraph.SVGOptions{Title: "Off-CPU " + res.Window.End.UTC().Format(time.RFC3339)}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close detaches the profiler and waits for the copy reader to stop.
func (r *Recorder) Close() error {
	err := r.prof.Close()
	if r.copiesDone != nil {
		<-r.copiesDone
	}
	return err
}

// Stats reports the kernel run-time accounting of the profiler's programs
// (it counts only while bpf.EnableRunStats is on).
func (r *Recorder) Stats() ([]bpf.ProgramStats, error) { return r.prof.Stats() }
