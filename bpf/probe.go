package bpf

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/triage-agent/triage/bpf/tracefs"
)

var memlockOnce sync.Once

// removeMemlock lifts RLIMIT_MEMLOCK on kernels that still charge BPF maps
// to it (before 5.11); later kernels account to the memory cgroup and the
// call is a no-op. Failure is not fatal: the load reports the real error.
func removeMemlock() { memlockOnce.Do(func() { _ = rlimit.RemoveMemlock() }) }

// Tier is the attach mechanism of a signal probe. The loader tries them in
// order (tp_btf, raw_tp, classic tracepoint) unless one is forced.
type Tier int

const (
	TierAuto       Tier = iota // try BTF, then raw, then tracepoint
	TierBTF                    // tp_btf: typed arguments, needs kernel BTF
	TierRaw                    // raw_tp: untyped arguments read with CO-RE
	TierTracepoint             // classic tracepoint via tracefs
	TierIter                   // BPF iterator (accept queue)
)

func (t Tier) String() string {
	switch t {
	case TierAuto:
		return "auto"
	case TierBTF:
		return "tp_btf"
	case TierRaw:
		return "raw_tp"
	case TierTracepoint:
		return "tracepoint"
	case TierIter:
		return "iter"
	}
	return fmt.Sprintf("tier(%d)", int(t))
}

// ParseTier reads the names String prints ("auto", "tp_btf", "raw_tp",
// "tracepoint"); "" means auto.
func ParseTier(s string) (Tier, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return TierAuto, nil
	case "tp_btf", "btf":
		return TierBTF, nil
	case "raw_tp", "raw":
		return TierRaw, nil
	case "tracepoint", "tp":
		return TierTracepoint, nil
	}
	return TierAuto, fmt.Errorf("unknown tier %q (want auto, tp_btf, raw_tp or tracepoint): %w", s, ErrBadTier)
}

// ErrBadTier is returned for a tier a probe does not have.
var ErrBadTier = errors.New("unsupported tier")

// ErrNoTier is returned (wrapped, with each tier's reason) when no tier of
// a probe could be loaded and attached.
var ErrNoTier = errors.New("no tier could attach")

// TierAttempt records why one tier of a probe failed.
type TierAttempt struct {
	Tier Tier
	Err  error
}

// hook is one kernel hook of a probe: the tracepoint's group and name,
// and the program implementing it on each tier ("" when absent).
type hook struct {
	group, name  string
	btf, raw, tp string
}

func (h hook) prog(t Tier) string {
	switch t {
	case TierBTF:
		return h.btf
	case TierRaw:
		return h.raw
	case TierTracepoint:
		return h.tp
	}
	return ""
}

// probe is a loaded, attached probe: its collection (only the chosen
// tier's programs and the maps they use) and its links. The tiered probes
// (Runqlat, Blkio, Syscalls, TCPStat) embed it for Tier, Attempts, Stats
// and Close, which mean the same for each.
type probe struct {
	name     string
	tier     Tier
	coll     *ebpf.Collection
	links    []link.Link
	progs    []string
	hooks    []hook
	attempts []TierAttempt
}

// openProbe loads and attaches every hook on the first tier that works
// for all of them (a probe never mixes tiers: its maps are per tier).
func openProbe(name string, load func() (*ebpf.CollectionSpec, error), hooks []hook, want Tier) (*probe, error) {
	removeMemlock()
	tiers := []Tier{TierBTF, TierRaw, TierTracepoint}
	if want != TierAuto {
		found := false
		for _, t := range tiers {
			found = found || t == want
		}
		if !found {
			return nil, fmt.Errorf("%s: %v: %w", name, want, ErrBadTier)
		}
		tiers = []Tier{want}
	}
	var attempts []TierAttempt
	for _, t := range tiers {
		p, err := loadTier(name, load, hooks, t)
		if err == nil {
			p.attempts = attempts
			return p, nil
		}
		attempts = append(attempts, TierAttempt{Tier: t, Err: err})
	}
	var msgs []string
	for _, a := range attempts {
		msgs = append(msgs, fmt.Sprintf("%s: %v", a.Tier, a.Err))
	}
	return nil, fmt.Errorf("%s: %w (%s)", name, ErrNoTier, strings.Join(msgs, "; "))
}

func loadTier(name string, load func() (*ebpf.CollectionSpec, error), hooks []hook, t Tier) (*probe, error) {
	spec, err := load()
	if err != nil {
		return nil, fmt.Errorf("loading %s spec: %w", name, err)
	}
	var keep []string
	for _, h := range hooks {
		pn := h.prog(t)
		if pn == "" {
			return nil, fmt.Errorf("hook %s has no %s program: %w", h.name, t, ErrBadTier)
		}
		keep = append(keep, pn)
	}
	pruneSpec(spec, keep)
	if t == TierTracepoint {
		if err := tracefs.Mount(); err != nil {
			return nil, err
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("loading %s programs: %w", t, err)
	}
	p := &probe{name: name, tier: t, coll: coll, progs: keep, hooks: hooks}
	if err := p.attach(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// attach links every hook's program; a no-op while attached.
func (p *probe) attach() error {
	if len(p.links) > 0 {
		return nil
	}
	for _, h := range p.hooks {
		prog := p.coll.Programs[h.prog(p.tier)]
		var (
			l   link.Link
			err error
		)
		switch p.tier {
		case TierBTF:
			l, err = link.AttachTracing(link.TracingOptions{Program: prog})
		case TierRaw:
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: h.name, Program: prog})
		case TierTracepoint:
			l, err = link.Tracepoint(h.group, h.name, prog, nil)
		}
		if err != nil {
			p.detach()
			return fmt.Errorf("attaching %s/%s: %w", h.group, h.name, err)
		}
		p.links = append(p.links, l)
	}
	return nil
}

// detach unlinks the programs but keeps them and their maps loaded, so a
// probe with nothing to watch costs the kernel nothing until re-attached.
func (p *probe) detach() error {
	var errs []error
	for _, l := range p.links {
		errs = append(errs, l.Close())
	}
	p.links = nil
	return errors.Join(errs...)
}

// pruneSpec keeps only the named programs and the maps they reference, so
// that a tier's load never fails on another tier's map or program type.
func pruneSpec(spec *ebpf.CollectionSpec, keep []string) {
	want := map[string]bool{}
	for _, k := range keep {
		want[k] = true
	}
	used := map[string]bool{}
	for name, ps := range spec.Programs {
		if !want[name] {
			delete(spec.Programs, name)
			continue
		}
		for _, ins := range ps.Instructions {
			if ref := ins.Reference(); ref != "" {
				used[ref] = true
			}
		}
	}
	for name := range spec.Maps {
		if !used[name] {
			delete(spec.Maps, name)
		}
	}
}

func (p *probe) mapNamed(name string) *ebpf.Map { return p.coll.Maps[name] }

// Tier is the tier that attached.
func (p *probe) Tier() Tier { return p.tier }

// Attempts lists the tiers tried before the one that attached.
func (p *probe) Attempts() []TierAttempt { return p.attempts }

// Stats reports each loaded program's kernel run-time accounting.
func (p *probe) Stats() ([]ProgramStats, error) {
	out := make([]ProgramStats, 0, len(p.progs))
	for _, n := range p.progs {
		s, err := programStats(n, p.coll.Programs[n])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// setConfigFlags writes the flags word (index TRIAGE_CFG_FLAGS) of a
// probe's config array.
func setConfigFlags(m *ebpf.Map, flags uint32) error {
	if err := m.Put(uint32(0), flags); err != nil {
		return fmt.Errorf("writing probe config: %w", err)
	}
	return nil
}

// The flags mirror TRIAGE_FLAG_* in headers/triage_signals.h.
const (
	flagWatchCgroups uint32 = 1 << 0
	flagWatchPIDs    uint32 = 1 << 1
	flagWatchAll     uint32 = 1 << 2
)

// Close detaches and unloads the programs; safe to call twice.
func (p *probe) Close() error {
	if p == nil {
		return nil
	}
	err := p.detach()
	if p.coll != nil {
		p.coll.Close()
		p.coll = nil
	}
	return err
}
