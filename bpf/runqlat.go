package bpf

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrCgroupsUnsupported is returned by WatchCgroup on the classic
// tracepoint tier, whose sched_switch record has no task pointer to read
// the next task's cgroup from.
var ErrCgroupsUnsupported = errors.New("per-cgroup histograms need the tp_btf or raw_tp tier")

// MaxWatchedCgroups is how many cgroups the per-cgroup run-queue map holds
// (max_entries of runqlat_cgroup_hist): a bounded map, so that watching
// cannot grow kernel memory without limit.
const MaxWatchedCgroups = 256

// ErrCgroupMapFull is returned by WatchCgroup when the per-cgroup map
// already holds MaxWatchedCgroups cgroups. The cgroup's tasks still count
// in the node-wide histogram.
var ErrCgroupMapFull = errors.New("the per-cgroup run-queue map is full")

// RunqlatOptions configure OpenRunqlat; the zero value means auto tier,
// every enqueue timed.
type RunqlatOptions struct {
	Tier Tier
	// SampleEvery times one enqueue in SampleEvery per CPU (a power of two;
	// 0 or 1 times all). Sampling cuts the per-switch cost (see
	// docs/signals.md) and the sample count, not the percentiles' bias.
	SampleEvery uint32
}

// ErrBadSampleRate is returned for a SampleEvery that is not a power of two.
var ErrBadSampleRate = errors.New("sample rate must be a power of two")

var runqlatHooks = []hook{
	{group: "sched", name: "sched_wakeup", btf: "runqlat_btf_wakeup", raw: "runqlat_raw_wakeup", tp: "runqlat_tp_wakeup"},
	{group: "sched", name: "sched_wakeup_new", btf: "runqlat_btf_wakeup_new", raw: "runqlat_raw_wakeup_new", tp: "runqlat_tp_wakeup_new"},
	{group: "sched", name: "sched_switch", btf: "runqlat_btf_switch", raw: "runqlat_raw_switch", tp: "runqlat_tp_switch"},
}

// Runqlat measures run-queue latency (runnable to running) node-wide and
// for watched cgroups, as cumulative log2 histograms.
type Runqlat struct {
	*probe
	reader  *percpuHist
	zero    []Hist
	watched map[uint64]bool
}

// OpenRunqlat loads and attaches the run-queue latency programs.
func OpenRunqlat(opts RunqlatOptions) (*Runqlat, error) {
	n := opts.SampleEvery
	if n > 1<<20 || (n != 0 && n&(n-1) != 0) {
		return nil, fmt.Errorf("runqlat sample every %d: %w", n, ErrBadSampleRate)
	}
	p, rd, err := openHistProbe("runqlat", loadRunqlat, runqlatHooks, opts.Tier)
	if err != nil {
		return nil, err
	}
	if n > 1 {
		if err := p.mapNamed("runqlat_config").Put(uint32(1), n-1); err != nil {
			p.Close()
			return nil, fmt.Errorf("setting runqlat sample rate: %w", err)
		}
	}
	return &Runqlat{probe: p, reader: rd, zero: make([]Hist, len(rd.buf)), watched: map[uint64]bool{}}, nil
}

// Read stores the node-wide cumulative histogram in dst.
func (r *Runqlat) Read(dst *Hist) error {
	if err := r.reader.read(r.mapNamed("runqlat_hist"), uint32(0), dst); err != nil {
		return fmt.Errorf("reading run-queue histogram: %w", err)
	}
	return nil
}

// WatchCgroup starts a histogram for the cgroup v2 id (the cgroup
// directory's inode number). Tasks in the cgroup or below it count.
func (r *Runqlat) WatchCgroup(id uint64) error {
	if r.tier == TierTracepoint {
		return ErrCgroupsUnsupported
	}
	if r.watched[id] {
		return nil
	}
	if err := r.mapNamed("runqlat_cgroup_hist").Put(id, r.zero); err != nil {
		if errors.Is(err, unix.E2BIG) { // a hash map's answer to a new key when full
			return fmt.Errorf("watching cgroup %d: %w (%d cgroups)", id, ErrCgroupMapFull, len(r.watched))
		}
		return fmt.Errorf("watching cgroup %d: %w", id, err)
	}
	r.watched[id] = true
	return setConfigFlags(r.mapNamed("runqlat_config"), flagWatchCgroups)
}

// UnwatchCgroup drops the cgroup's histogram.
func (r *Runqlat) UnwatchCgroup(id uint64) error {
	if !r.watched[id] {
		return nil
	}
	delete(r.watched, id)
	if err := r.mapNamed("runqlat_cgroup_hist").Delete(id); err != nil {
		return fmt.Errorf("unwatching cgroup %d: %w", id, err)
	}
	if len(r.watched) == 0 {
		return setConfigFlags(r.mapNamed("runqlat_config"), 0)
	}
	return nil
}

// ReadCgroup stores the cumulative histogram of a watched cgroup in dst.
func (r *Runqlat) ReadCgroup(id uint64, dst *Hist) error {
	if err := r.reader.read(r.mapNamed("runqlat_cgroup_hist"), id, dst); err != nil {
		return fmt.Errorf("reading run-queue histogram of cgroup %d: %w", id, err)
	}
	return nil
}
