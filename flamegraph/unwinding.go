package flamegraph

import (
	"errors"
	"path/filepath"

	"github.com/triage-agent/triage/flamegraph/unwind"
)

// Why part of a stack was walked by frame pointer instead of unwind tables
// (the reason of UnwindResult, a label of the agent's metric and the
// profile's comments).
const (
	FallbackNoTable     = "no unwind table"                // no .eh_frame / .debug_frame
	FallbackUnreadable  = "unwind table unreadable"        // the file or its tables could not be read
	FallbackOverBudget  = "unwind table over cache budget" // would take more than half the cache
	FallbackNoRow       = "address not in unwind table"    // e.g. hand-written assembly without CFI
	FallbackUnsupported = "unwind rule not supported"      // a CFA from another register, a DWARF expression
	FallbackJIT         = "JIT or anonymous code"          // no file behind the code
	FallbackNoMapping   = "address in no known mapping"
	FallbackStackCopy   = "stack copy too small" // the rest came from the kernel's frame-pointer walk
)

// UnwindResult is a user stack walked by UnwindUser.
type UnwindResult struct {
	PCs []uint64 // leaf first
	// Reason is why some frames were walked by frame pointer ("" when the
	// tables covered every frame that needed one); Module is the file
	// whose frame did it first.
	Reason, Module string
}

// MaxUserFrames is the depth UnwindUser walks to, the kernel's own
// frame-pointer walk's (PERF_MAX_STACK_DEPTH).
const MaxUserFrames = 127

// UnwindUser walks a user stack of pid from the registers and stack bytes
// the sampler copied: by the binaries' unwind tables (.eh_frame,
// .debug_frame), by frame pointer through Go code (which keeps them) and
// through code no table covers (JIT, a binary whose tables could not be
// read: those are reported). Where the copy ends before the stack does,
// the rest is taken from fpStack, the kernel's frame-pointer walk of the
// same sample, if the two meet. The process must have been captured.
func (s *Symbolizer) UnwindUser(pid uint32, regs unwind.Regs, stack unwind.Stack, fpStack []uint64, out []uint64) UnwindResult {
	var res UnwindResult
	pi := s.Process(pid)
	note := func(reason, module string) {
		if res.Reason == "" {
			res.Reason, res.Module = reason, module
		}
	}
	rules := func(pc uint64, leaf bool) (unwind.Row, bool) {
		if !leaf {
			pc--
		}
		if pi == nil {
			note(FallbackNoMapping, "")
			return unwind.Row{}, false
		}
		m := pi.find(pc)
		switch {
		case m == nil:
			note(FallbackNoMapping, "")
			return unwind.Row{}, false
		case isAnonymous(m.Path):
			note(FallbackJIT, "[anon]")
			return unwind.Row{}, false
		case m.Path[0] == '[':
			return unwind.Row{}, false // [vdso]: keeps frame pointers
		}
		bin := s.mappingBinary(pi, m)
		if bin == nil {
			note(FallbackUnreadable, filepath.Base(m.Path))
			return unwind.Row{}, false
		}
		if bin.IsGo {
			return unwind.Row{}, false // Go keeps frame pointers: sound, not a fallback
		}
		tab, err := s.unwindTable(pi, m, bin)
		if err != nil {
			note(fallbackReason(err), filepath.Base(m.Path))
			return unwind.Row{}, false
		}
		vaddr, ok := bin.VAddr(pc - m.Start + m.Offset)
		if !ok {
			note(FallbackNoRow, filepath.Base(m.Path))
			return unwind.Row{}, false
		}
		row, ok := tab.Lookup(vaddr)
		if !ok {
			note(FallbackNoRow, filepath.Base(m.Path))
		} else if row.Kind == unwind.KindUnsupported {
			note(FallbackUnsupported, filepath.Base(m.Path))
		}
		return row, ok
	}
	r := unwind.Unwind(regs, stack, rules, MaxUserFrames, out)
	res.PCs = r.PCs
	if r.End == unwind.EndTruncated {
		res.Reason, res.Module = FallbackStackCopy, ""
		res.PCs = splice(res.PCs, fpStack)
	}
	return res
}

// splice continues a walk that ran out of copied stack with the kernel's
// frame-pointer walk, from the first place the latter holds the walk's last
// return address (it holds it when the frames above keep frame pointers).
func splice(pcs, fp []uint64) []uint64 {
	if len(pcs) < 2 {
		return pcs
	}
	last := pcs[len(pcs)-1]
	for i, pc := range fp {
		if pc == last {
			for _, more := range fp[i+1:] {
				if len(pcs) >= MaxUserFrames {
					break
				}
				pcs = append(pcs, more)
			}
			break
		}
	}
	return pcs
}

func fallbackReason(err error) string {
	switch {
	case errors.Is(err, unwind.ErrNoCFI):
		return FallbackNoTable
	case errors.Is(err, unwind.ErrTooLarge):
		return FallbackOverBudget
	}
	return FallbackUnreadable
}

// unwindTable builds (once per binary) the table of the binary behind m.
// The cache's byte cap is checked again afterwards, since the table adds to
// the binary's size.
func (s *Symbolizer) unwindTable(pi *ProcessInfo, m *Mapping, bin *Binary) (*unwind.Table, error) {
	built := !bin.unwindDone.Load() // this call builds it: check the cap after
	var before uint64
	if built { // the allocation counter is read for a build, not for every frame
		before = heapAllocated()
	}
	tab, err := bin.UnwindTable(s.mappingPaths(pi.Pid, m), s.debugDirs(pi.Pid), s.cfg.MaxCacheBytes/2)
	if built {
		s.afterBuild(before)
	}
	if err == nil && built {
		s.mu.Lock()
		if key := pi.binKeys[m.Start]; key != "" {
			s.evictLocked(key)
		}
		s.mu.Unlock()
	}
	return tab, err
}

// FramePointerSound reports whether every executable file mapping of pid is
// Go code (Go keeps frame pointers on amd64) or the vDSO, and none is
// anonymous: then the kernel's frame-pointer walk is the whole truth and
// the sampler need not copy the process's stack. Mappings must have been
// captured.
func (s *Symbolizer) FramePointerSound(pid uint32) bool {
	pi := s.Process(pid)
	if pi == nil || len(pi.Mappings) == 0 {
		return false
	}
	for i := range pi.Mappings {
		m := &pi.Mappings[i]
		if isAnonymous(m.Path) {
			return false
		}
		if m.Path[0] == '[' {
			continue
		}
		if bin := s.mappingBinary(pi, m); bin == nil || !bin.IsGo {
			return false
		}
	}
	return true
}
