package flamegraph

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"sort"
	"unsafe"
)

// inlineIndex answers "which functions are at this address, innermost
// first" from DWARF: each subprogram and each DW_TAG_inlined_subroutine
// within it, flattened into address segments that each name one chain.
// It is built once per binary by walking .debug_info and keeps none of the
// DWARF sections (for libc's debug file those are ~12 MiB; the index is a
// small fraction of that).
type inlineIndex struct {
	segs   []inlineSeg   // sorted by pc; chain -1: no function known
	chains [][]int32     // innermost first, indices into funcs
	funcs  []inlineFrame // one per DIE kept
	names  []string      // interned function names
	bytes  int
}

type inlineSeg struct {
	pc    uint64
	chain int32
}

// inlineFrame is one DIE: its function, and for an inlined call the line
// it was called from in its parent's function. The call's file is not
// kept: it is an index into the unit's line-table header, and the
// standard library's reader of that header allocates whatever a crafted
// file count asks for (gigabytes), so it is not run on other tenants'
// files; the function names and call lines are what a flame graph needs.
type inlineFrame struct {
	name     int32
	callLine int32
}

// Bounds of the index: DIEs kept and the depth of inlining followed.
const (
	maxInlineFuncs = 1 << 21
	maxInlineDepth = 32
)

var errInlineTooLarge = errors.New("DWARF inline index over its limit")

// inlineLevel is the walk's state at one DIE with children.
type inlineLevel struct {
	depth int   // inline depth of this DIE's function (-1 outside any)
	fn    int32 // its frame (-1 outside any)
}

type inlineRange struct {
	lo, hi uint64
	depth  int
	fn     int32
}

// buildInlineIndex walks every compilation unit of d, whose .debug_info is
// infoBytes long. maxBytes caps the index (0: no cap).
func buildInlineIndex(d *dwarf.Data, infoBytes int, maxBytes int) (*inlineIndex, error) {
	b := &inlineBuilder{d: d, nameIdx: map[string]int32{}, origins: map[dwarf.Offset]string{}}
	idx := &inlineIndex{}
	var ranges []inlineRange
	r := d.Reader()
	var stack []inlineLevel
	// Every entry, null ones included, takes at least a byte of
	// .debug_info: more entries than bytes means the reader is not moving
	// (debug/dwarf hands out null entries forever on some malformed units).
	for n := 0; ; n++ {
		if n > infoBytes {
			return nil, errors.New("malformed DWARF: more entries than .debug_info has bytes")
		}
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("reading DWARF: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag == 0 { // end of a sibling list
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		parent := inlineLevel{depth: -1, fn: -1}
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		cur := parent
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
			stack = stack[:0]
			parent, cur = inlineLevel{depth: -1, fn: -1}, inlineLevel{depth: -1, fn: -1}
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			if e.Tag == dwarf.TagSubprogram && parent.depth >= 0 {
				break // a nested function's own code: not part of this chain
			}
			if e.Tag == dwarf.TagInlinedSubroutine && (parent.depth < 0 || parent.depth+1 >= maxInlineDepth) {
				break
			}
			rs, err := d.Ranges(e)
			if err != nil || len(rs) == 0 {
				break
			}
			if len(idx.funcs) >= maxInlineFuncs {
				return nil, errInlineTooLarge
			}
			f := inlineFrame{name: b.name(e)}
			if e.Tag == dwarf.TagInlinedSubroutine {
				cur.depth = parent.depth + 1
				if ln, ok := e.Val(dwarf.AttrCallLine).(int64); ok && ln > 0 && ln < 1<<31 {
					f.callLine = int32(ln)
				}
			} else {
				cur.depth = 0
			}
			cur.fn = int32(len(idx.funcs))
			idx.funcs = append(idx.funcs, f)
			for _, rg := range rs {
				if rg[1] > rg[0] {
					ranges = append(ranges, inlineRange{rg[0], rg[1], cur.depth, cur.fn})
				}
			}
			if maxBytes > 0 && len(ranges)*int(unsafe.Sizeof(inlineRange{})) > 2*maxBytes {
				return nil, errInlineTooLarge
			}
		}
		if e.Children {
			if skipSubtree(e.Tag, cur) {
				r.SkipChildren() // jumps by DW_AT_sibling where the compiler wrote one
				continue
			}
			stack = append(stack, cur)
		}
	}
	b.resolveNames(idx)
	idx.names = b.names
	idx.flatten(ranges)
	idx.bytes = idx.size()
	if maxBytes > 0 && idx.bytes > maxBytes {
		return nil, errInlineTooLarge
	}
	return idx, nil
}

// skipSubtree reports whether a DIE's children cannot hold code: types,
// and everything under a subprogram that has no code of its own (an
// abstract instance, a declaration). Namespaces, classes' out-of-line
// bodies (top-level DIEs with DW_AT_specification) and lexical blocks are
// walked. Skipping these halves what the walk allocates.
func skipSubtree(tag dwarf.Tag, cur inlineLevel) bool {
	switch tag {
	case dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType, dwarf.TagEnumerationType,
		dwarf.TagSubroutineType, dwarf.TagArrayType, dwarf.TagFormalParameter, dwarf.TagVariable:
		return true
	case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
		return cur.fn < 0
	}
	return false
}

// inlineBuilder interns names and resolves abstract origins: an inlined
// subroutine (and an out-of-line copy of an inlined function) names its
// function through DW_AT_abstract_origin or DW_AT_specification, often a
// DIE later in the unit, so those are resolved after the walk.
type inlineBuilder struct {
	d       *dwarf.Data
	names   []string
	nameIdx map[string]int32
	pending []pendingName
	origins map[dwarf.Offset]string
}

type pendingName struct{ ref dwarf.Offset }

func intern(list *[]string, idx map[string]int32, s string) int32 {
	if i, ok := idx[s]; ok {
		return i
	}
	i := int32(len(*list))
	*list = append(*list, s)
	idx[s] = i
	return i
}

// name returns the interned name of a DIE, or -1 and a pending reference.
func (b *inlineBuilder) name(e *dwarf.Entry) int32 {
	if n := dieName(e); n != "" {
		return intern(&b.names, b.nameIdx, demangleName(n))
	}
	for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		if ref, ok := e.Val(a).(dwarf.Offset); ok {
			b.pending = append(b.pending, pendingName{ref})
			return -2 - int32(len(b.pending)-1) // resolved in resolveNames
		}
	}
	return -1
}

// dieName prefers the linkage name (the mangled full name: namespace,
// class and template arguments) over DW_AT_name (the bare identifier).
func dieName(e *dwarf.Entry) string {
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, dwarf.Attr(0x2007) /* DW_AT_MIPS_linkage_name */, dwarf.AttrName} {
		if s, ok := e.Val(a).(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// resolveNames follows each pending reference (origin, then its
// specification, a few hops at most) to a name.
func (b *inlineBuilder) resolveNames(idx *inlineIndex) {
	r := b.d.Reader()
	for i := range idx.funcs {
		n := idx.funcs[i].name
		if n >= -1 {
			continue
		}
		ref := b.pending[-2-n].ref
		name, ok := b.origins[ref]
		if !ok {
			name = b.follow(r, ref)
			b.origins[ref] = name
		}
		if name == "" {
			idx.funcs[i].name = -1
			continue
		}
		idx.funcs[i].name = intern(&b.names, b.nameIdx, demangleName(name))
	}
	b.pending = nil
}

func (b *inlineBuilder) follow(r *dwarf.Reader, ref dwarf.Offset) string {
	for hop := 0; hop < 4; hop++ {
		r.Seek(ref)
		e, err := r.Next()
		if err != nil || e == nil {
			return ""
		}
		if n := dieName(e); n != "" {
			return n
		}
		next, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			if next, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				return ""
			}
		}
		ref = next
	}
	return ""
}

// flatten turns nested ranges into segments: at each boundary, the chain is
// the innermost range active at each depth, from the deepest down to 0.
func (idx *inlineIndex) flatten(ranges []inlineRange) {
	type event struct {
		pc    uint64
		start bool
		r     int
	}
	evs := make([]event, 0, 2*len(ranges))
	for i, r := range ranges {
		evs = append(evs, event{r.lo, true, i}, event{r.hi, false, i})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].pc != evs[j].pc {
			return evs[i].pc < evs[j].pc
		}
		return !evs[i].start && evs[j].start // ends before starts
	})
	active := make([]int, maxInlineDepth) // range index +1 per depth; 0: none
	chainIdx := map[string]int32{}
	var key []byte
	for i := 0; i < len(evs); {
		pc := evs[i].pc
		for ; i < len(evs) && evs[i].pc == pc; i++ {
			ev := evs[i]
			d := ranges[ev.r].depth
			if ev.start {
				active[d] = ev.r + 1
			} else if active[d] == ev.r+1 {
				active[d] = 0
			}
		}
		// The chain runs from depth 0 up while each depth is active.
		var chain []int32
		for d := 0; d < maxInlineDepth && active[d] != 0; d++ {
			chain = append(chain, ranges[active[d]-1].fn)
		}
		c := int32(-1)
		if len(chain) > 0 {
			for l, r := 0, len(chain)-1; l < r; l, r = l+1, r-1 {
				chain[l], chain[r] = chain[r], chain[l] // innermost first
			}
			key = key[:0]
			for _, f := range chain {
				key = append(key, byte(f), byte(f>>8), byte(f>>16), byte(f>>24))
			}
			var ok bool
			if c, ok = chainIdx[string(key)]; !ok {
				c = int32(len(idx.chains))
				idx.chains = append(idx.chains, chain)
				chainIdx[string(key)] = c
			}
		}
		if n := len(idx.segs); n > 0 && idx.segs[n-1].chain == c {
			continue
		}
		idx.segs = append(idx.segs, inlineSeg{pc, c})
	}
}

func (idx *inlineIndex) size() int {
	n := cap(idx.segs)*int(unsafe.Sizeof(inlineSeg{})) + cap(idx.funcs)*int(unsafe.Sizeof(inlineFrame{}))
	for _, c := range idx.chains {
		n += 24 + 4*cap(c)
	}
	for _, s := range idx.names {
		n += 16 + len(s)
	}
	return n
}

// frames returns the functions at vaddr, innermost first: each inlined
// callee, then the function it was inlined into. Line is the line of the
// call in the caller for the outer frames (DWARF's call_line), 0 for the
// innermost one.
func (idx *inlineIndex) frames(vaddr uint64) []Frame {
	if idx == nil {
		return nil
	}
	segs := idx.segs
	i := sort.Search(len(segs), func(i int) bool { return segs[i].pc > vaddr }) - 1
	if i < 0 || segs[i].chain < 0 {
		return nil
	}
	chain := idx.chains[segs[i].chain]
	out := make([]Frame, len(chain))
	for j, fi := range chain {
		f := idx.funcs[fi]
		if f.name >= 0 {
			out[j].Function = idx.names[f.name]
		}
		if j > 0 {
			out[j].Line = int(idx.funcs[chain[j-1]].callLine)
		}
	}
	return out
}
