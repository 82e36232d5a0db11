package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/triage-agent/triage/bpf/tracefs"
)

// attachOffCPU loads and attaches the sched_switch program, trying tp_btf
// first (cheapest, needs BTF), then raw_tp, then the classic tracepoint
// (needs tracefs, which is mounted here if absent). Each flavour is loaded on
// its own so that one the kernel rejects does not take the others down.
func (p *Profiler) attachOffCPU() error {
	type flavour struct {
		name, prog string
		attach     func(*ebpf.Program) (link.Link, error)
	}
	flavours := []flavour{
		{"tp_btf", profilerOffcpuProgOffcpuSwitchBtf, func(pr *ebpf.Program) (link.Link, error) {
			return link.AttachTracing(link.TracingOptions{Program: pr, AttachType: ebpf.AttachTraceRawTp})
		}},
		{"raw_tp", profilerOffcpuProgOffcpuSwitchRaw, func(pr *ebpf.Program) (link.Link, error) {
			return link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_switch", Program: pr})
		}},
		{"tracepoint", profilerOffcpuProgOffcpuSwitchTp, func(pr *ebpf.Program) (link.Link, error) {
			if err := tracefs.Mount(); err != nil {
				return nil, err
			}
			return link.Tracepoint("sched", "sched_switch", pr, nil)
		}},
	}
	var errs []error
	for _, f := range flavours {
		if p.opts.OffCPUHook != "" && p.opts.OffCPUHook != f.name {
			continue
		}
		objs, l, err := p.loadOffCPU(f.prog, f.attach)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.name, err))
			continue
		}
		p.off, p.offHook = objs, f.name
		p.links = append(p.links, l)
		p.offStk = newStackCache(objs.OffcpuStacks, p.opts.StackEntries/2)
		return nil
	}
	if len(errs) == 0 {
		return fmt.Errorf("%w: unknown hook %q", ErrNoOffCPUHook, p.opts.OffCPUHook)
	}
	return fmt.Errorf("%w: %w", ErrNoOffCPUHook, errors.Join(errs...))
}

func (p *Profiler) loadOffCPU(progName string, attach func(*ebpf.Program) (link.Link, error)) (*profilerOffcpuObjects, link.Link, error) {
	spec, err := loadProfilerOffcpu()
	if err != nil {
		return nil, nil, err
	}
	for name := range spec.Programs {
		if name != progName {
			delete(spec.Programs, name)
		}
	}
	spec.Maps[profilerOffcpuMapOffcpuStacks].MaxEntries = max(p.opts.StackEntries/2, 256)
	spec.Maps[profilerOffcpuMapOffcpuCounts0].MaxEntries = p.opts.CountEntries
	spec.Maps[profilerOffcpuMapOffcpuCounts1].MaxEntries = p.opts.CountEntries
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("loading off-CPU program: %w", err)
	}
	objs := &profilerOffcpuObjects{}
	objs.OffcpuControl = coll.Maps[profilerOffcpuMapOffcpuControl]
	objs.OffcpuCounts0 = coll.Maps[profilerOffcpuMapOffcpuCounts0]
	objs.OffcpuCounts1 = coll.Maps[profilerOffcpuMapOffcpuCounts1]
	objs.OffcpuLost = coll.Maps[profilerOffcpuMapOffcpuLost]
	objs.OffcpuStacks = coll.Maps[profilerOffcpuMapOffcpuStacks]
	objs.OffcpuStarts = coll.Maps[profilerOffcpuMapOffcpuStarts]
	// Only the attached program is loaded; the other two fields stay nil
	// (closing a nil *ebpf.Program is a no-op).
	prog := coll.Programs[progName]
	switch progName {
	case profilerOffcpuProgOffcpuSwitchBtf:
		objs.OffcpuSwitchBtf = prog
	case profilerOffcpuProgOffcpuSwitchRaw:
		objs.OffcpuSwitchRaw = prog
	default:
		objs.OffcpuSwitchTp = prog
	}
	if err := p.writeControl(objs.OffcpuControl); err != nil {
		coll.Close()
		return nil, nil, err
	}
	l, err := attach(prog)
	if err != nil {
		coll.Close()
		return nil, nil, fmt.Errorf("attaching sched_switch: %w", err)
	}
	return objs, l, nil
}
