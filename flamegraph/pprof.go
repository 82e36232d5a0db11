package flamegraph

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Sample type names written into profiles.
const (
	TypeSamples = "samples" // count
	TypeCPU     = "cpu"     // nanoseconds
	TypeOffCPU  = "off_cpu" // nanoseconds
)

// ErrEmptyProfile means there is nothing to render.
var ErrEmptyProfile = errors.New("profile has no samples")

// BuildOptions configures BuildProfile.
type BuildOptions struct {
	Window Window
	// Symbolizer names the frames; nil leaves every frame as module+0xoffset
	// (or [unknown]+0xaddr), never dropped.
	Symbolizer *Symbolizer
	// Comments are added to the profile's comments (go tool pprof -comments).
	Comments []string
}

// BuildProfile turns samples into a pprof profile. On-CPU samples give the
// sample types samples/count and cpu/nanoseconds (count × period); off-CPU
// samples give off_cpu/nanoseconds. A profile holding both has all three,
// with cpu as the default type.
func BuildProfile(samples []Sample, opts BuildOptions) (*profile.Profile, error) {
	hz := opts.Window.FrequencyHz
	if hz <= 0 {
		hz = 19
	}
	period := int64(time.Second) / int64(hz)
	var hasOn, hasOff bool
	for i := range samples {
		if samples[i].Kind == OffCPU {
			hasOff = true
		} else {
			hasOn = true
		}
	}
	p := &profile.Profile{}
	idx := map[string]int{}
	if hasOn || !hasOff {
		p.SampleType = append(p.SampleType,
			&profile.ValueType{Type: TypeSamples, Unit: "count"},
			&profile.ValueType{Type: TypeCPU, Unit: "nanoseconds"})
		idx[TypeSamples], idx[TypeCPU] = 0, 1
		p.PeriodType = &profile.ValueType{Type: TypeCPU, Unit: "nanoseconds"}
		p.Period = period
		p.DefaultSampleType = TypeCPU
	}
	if hasOff {
		idx[TypeOffCPU] = len(p.SampleType)
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: TypeOffCPU, Unit: "nanoseconds"})
		if !hasOn {
			p.PeriodType = &profile.ValueType{Type: TypeOffCPU, Unit: "nanoseconds"}
			p.Period = 1
			p.DefaultSampleType = TypeOffCPU
		}
	}
	if !opts.Window.Start.IsZero() {
		p.TimeNanos = opts.Window.Start.UnixNano()
		if !opts.Window.End.IsZero() {
			p.DurationNanos = opts.Window.End.Sub(opts.Window.Start).Nanoseconds()
		}
	}
	b := &builder{p: p, sym: opts.Symbolizer, locs: map[locKey]*profile.Location{},
		funcs: map[funcKey]*profile.Function{}, maps: map[Mapping]*profile.Mapping{}}
	p.Comments = append(p.Comments, opts.Comments...)
	b.resolveKernel(samples)
	fallbacks := map[string]int64{}
	for i := range samples {
		s := &samples[i]
		if s.Value <= 0 {
			continue
		}
		if s.UnwindReason != "" {
			fallbacks[fallbackComment(s.UnwindReason, s.UnwindModule)] += s.Value
		}
		ps := &profile.Sample{
			Value:    make([]int64, len(p.SampleType)),
			Label:    map[string][]string{},
			NumLabel: map[string][]int64{"pid": {int64(s.Pid)}, "tid": {int64(s.Tid)}},
		}
		if s.Kind == OffCPU {
			ps.Value[idx[TypeOffCPU]] = s.Value
		} else {
			ps.Value[idx[TypeSamples]] = s.Value
			ps.Value[idx[TypeCPU]] = s.Value * period
		}
		comm := s.Comm
		var pi *ProcessInfo
		if b.sym != nil {
			pi = b.sym.Process(s.Pid)
		}
		if pi != nil {
			if comm == "" {
				comm = pi.Comm
			}
			if pi.Container != "" {
				ps.Label["container"] = []string{pi.Container}
			}
			if pi.Cgroup != "" {
				ps.Label["cgroup"] = []string{pi.Cgroup}
			}
		}
		if comm != "" {
			ps.Label["comm"] = []string{comm}
		}
		if s.CgroupID != 0 {
			ps.NumLabel["cgroup_id"] = []int64{int64(s.CgroupID)}
		}
		// Leaf first, kernel frames below the user ones (the kernel was
		// entered from user space).
		ownFrames := true
		for _, pc := range s.KernelPCs {
			loc := b.kernelLoc(pc)
			// The profiler's own frames (the BPF program and the tracepoint
			// glue that called it) sit on top of every off-CPU stack; they
			// say nothing about the task, so leading ones are left out.
			if ownFrames && isProfilerFrame(loc.Line[0].Function.Name) {
				continue
			}
			ownFrames = false
			ps.Location = append(ps.Location, loc)
		}
		if s.KernelMissing != "" {
			ps.Location = append(ps.Location, b.placeholder("[kernel stack "+s.KernelMissing+"]", true))
		}
		for j, pc := range s.UserPCs {
			ps.Location = append(ps.Location, b.userLoc(s.Pid, pc, j == 0))
		}
		if s.UserMissing != "" {
			ps.Location = append(ps.Location, b.placeholder("[user stack "+s.UserMissing+"]", false))
		}
		if len(ps.Location) == 0 {
			ps.Location = append(ps.Location, b.placeholder("[no stack]", false))
		}
		p.Sample = append(p.Sample, ps)
	}
	p.Comments = append(p.Comments, fallbackComments(fallbacks, hasOff && !hasOn)...)
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("building profile: %w", err)
	}
	return p, nil
}

func fallbackComment(reason, module string) string {
	if module == "" {
		return reason
	}
	return reason + ": " + module
}

// fallbackComments says, per reason and file, how many samples had frames
// walked by frame pointer where unwind tables were wanted: those stacks may
// miss a caller (a function without a frame hides the one above it).
func fallbackComments(counts map[string]int64, offCPU bool) []string {
	unit := "samples"
	if offCPU {
		unit = "ns"
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("unwind: frame pointers used (%s) in %d %s", k, counts[k], unit))
	}
	return out
}

func isProfilerFrame(name string) bool {
	for _, p := range []string{"bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_", "perf_trace_", "bpf_overflow_handler", "__perf_event_overflow"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

type locKey struct {
	kernel bool
	m      Mapping
	addr   uint64
	name   string
}

type funcKey struct{ name, file string }

type builder struct {
	p     *profile.Profile
	sym   *Symbolizer
	locs  map[locKey]*profile.Location
	funcs map[funcKey]*profile.Function
	maps  map[Mapping]*profile.Mapping
	kmap  *profile.Mapping
	// kernelUnnamed: the kernel's symbols could not be read for this
	// profile.
	kernelUnnamed bool
}

func (b *builder) function(name, file string) *profile.Function {
	k := funcKey{name, file}
	if f := b.funcs[k]; f != nil {
		return f
	}
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: file}
	b.funcs[k] = f
	b.p.Function = append(b.p.Function, f)
	return f
}

func (b *builder) mapping(m Mapping, buildID string, kernel bool) *profile.Mapping {
	if kernel {
		if b.kmap == nil {
			b.kmap = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: "[kernel.kallsyms]", HasFunctions: true}
			b.p.Mapping = append(b.p.Mapping, b.kmap)
		}
		return b.kmap
	}
	if pm := b.maps[m]; pm != nil {
		return pm
	}
	pm := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: m.Start, Limit: m.Limit, Offset: m.Offset,
		File: m.Path, BuildID: buildID, HasFunctions: true}
	b.maps[m] = pm
	b.p.Mapping = append(b.p.Mapping, pm)
	return pm
}

func (b *builder) add(k locKey, mk func() *profile.Location) *profile.Location {
	if l := b.locs[k]; l != nil {
		return l
	}
	l := mk()
	l.ID = uint64(len(b.p.Location) + 1)
	b.locs[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// resolveKernel names every kernel frame of the samples in one read of the
// kernel's symbols, rather than one read per frame. When that read fails
// the frames stay [kernel]+0x... and are not read one by one.
func (b *builder) resolveKernel(samples []Sample) {
	if b.sym == nil {
		return
	}
	seen := map[uint64]struct{}{}
	for i := range samples {
		for _, pc := range samples[i].KernelPCs {
			seen[pc] = struct{}{}
		}
	}
	if len(seen) == 0 {
		return
	}
	b.kernelUnnamed = b.sym.ResolveKernel(slices.Collect(maps.Keys(seen))) != nil
}

func (b *builder) kernelLoc(pc uint64) *profile.Location {
	return b.add(locKey{kernel: true, addr: pc}, func() *profile.Location {
		var loc Location
		if b.sym != nil && !b.kernelUnnamed {
			loc = b.sym.KernelLocation(pc)
		} else {
			loc = Location{Address: pc, Kernel: true}
		}
		return &profile.Location{Address: pc, Mapping: b.mapping(Mapping{}, "", true),
			Line: []profile.Line{{Function: b.function(loc.Name(), loc.Module)}}}
	})
}

func (b *builder) userLoc(pid uint32, pc uint64, leaf bool) *profile.Location {
	// Key by mapping and address before symbolising, so each distinct
	// frame is looked up once per profile.
	var m Mapping
	var mp *Mapping
	if b.sym != nil {
		mp = b.sym.MappingOf(pid, pc)
	}
	if mp != nil {
		m = *mp
	}
	return b.add(locKey{m: m, addr: pc}, func() *profile.Location {
		loc := Location{Address: pc}
		if b.sym != nil {
			loc = b.sym.UserLocation(pid, pc, leaf)
		}
		pl := &profile.Location{Address: pc}
		if loc.Mapping != nil {
			pl.Mapping = b.mapping(*loc.Mapping, loc.BuildID, false)
		}
		// Inlined functions are several lines of one location, innermost
		// first, as pprof expects.
		for _, fr := range loc.Frames {
			file := fr.File
			if file == "" {
				file = loc.Module
			}
			pl.Line = append(pl.Line, profile.Line{Function: b.function(fr.Function, file), Line: int64(fr.Line)})
		}
		if len(pl.Line) == 0 {
			file := loc.Frame.File
			if file == "" {
				file = loc.Module
			}
			pl.Line = []profile.Line{{Function: b.function(loc.Name(), file), Line: int64(loc.Frame.Line)}}
		}
		return pl
	})
}

func (b *builder) placeholder(name string, kernel bool) *profile.Location {
	return b.add(locKey{kernel: kernel, name: name}, func() *profile.Location {
		l := &profile.Location{Line: []profile.Line{{Function: b.function(name, "")}}}
		if kernel {
			l.Mapping = b.mapping(Mapping{}, "", true)
		}
		return l
	})
}

// WriteProfile checks p and writes it gzipped to path.
func WriteProfile(path string, p *profile.Profile) error {
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("invalid profile: %w", err)
	}
	return writeFileAtomic(path, func(w io.Writer) error { return p.Write(w) })
}

// ErrProfileTooLarge means a pprof file (or its decompressed content) is
// larger than ReadProfile accepts.
var ErrProfileTooLarge = errors.New("profile too large")

// Bounds of ReadProfile: the file itself, and what it decompresses to (a
// gzip bomb must not take the process's memory with it). Variables so the
// tests can lower them.
var (
	maxProfileFileBytes    = 64 << 20
	maxProfileDecodedBytes = 256 << 20
)

// ReadProfile parses a pprof file (gzipped or not), within size bounds.
func ReadProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening profile: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, int64(maxProfileFileBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("reading profile %s: %w", path, err)
	}
	if len(raw) > maxProfileFileBytes {
		return nil, fmt.Errorf("%w: %s is over %d MiB", ErrProfileTooLarge, path, maxProfileFileBytes>>20)
	}
	if len(raw) >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("parsing profile %s: %w", path, err)
		}
		raw, err = io.ReadAll(io.LimitReader(zr, int64(maxProfileDecodedBytes)+1))
		if err != nil {
			return nil, fmt.Errorf("decompressing profile %s: %w", path, err)
		}
		if len(raw) > maxProfileDecodedBytes {
			return nil, fmt.Errorf("%w: %s decompresses to over %d MiB", ErrProfileTooLarge, path, maxProfileDecodedBytes>>20)
		}
	}
	p, err := profile.ParseData(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing profile %s: %w", path, err)
	}
	return p, nil
}

// writeFileAtomic writes via a temporary file and rename, so readers (the
// admin page, a store listing) never see half a file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_ = tmp.Chmod(0o644) // readable by the admin page and by SREs copying files off the node
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming to %s: %w", path, err)
	}
	return nil
}
