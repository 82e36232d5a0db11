package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
)

// dumped is what testdata/selfdump.c wrote: its registers, the top of its
// stack and its mappings.
type dumped struct {
	regs  Regs
	stack Stack
	maps  []dumpMapping
}

type dumpMapping struct {
	start, limit, offset uint64
	path                 string
}

// runSelfDump builds selfdump.c with cc and flags and runs it.
func runSelfDump(t *testing.T, cc string, flags ...string) (string, *dumped) {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		testenv.Unavailable(t, cc+" not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "selfdump")
	args := append(append([]string{}, flags...), "-o", bin, "testdata/selfdump.c")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
	}
	regsPath, mapsPath := filepath.Join(dir, "regs"), filepath.Join(dir, "maps")
	if out, err := exec.Command(bin, regsPath, mapsPath).CombinedOutput(); err != nil {
		t.Fatalf("selfdump: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(regsPath)
	if err != nil || len(raw) < 32 {
		t.Fatalf("reading regs: %v (%d bytes)", err, len(raw))
	}
	d := &dumped{}
	d.regs = Regs{PC: binary.LittleEndian.Uint64(raw), SP: binary.LittleEndian.Uint64(raw[8:]), BP: binary.LittleEndian.Uint64(raw[16:])}
	n := binary.LittleEndian.Uint64(raw[24:])
	d.stack = Stack{Addr: d.regs.SP, Data: raw[32:]}
	if uint64(len(d.stack.Data)) != n {
		t.Fatalf("stack copy: header says %d bytes, file has %d", n, len(d.stack.Data))
	}
	mapsText, err := os.ReadFile(mapsPath)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(mapsText))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.Contains(f[1], "x") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		var m dumpMapping
		m.start, _ = strconv.ParseUint(lo, 16, 64)
		m.limit, _ = strconv.ParseUint(hi, 16, 64)
		m.offset, _ = strconv.ParseUint(f[2], 16, 64)
		m.path = f[5]
		d.maps = append(d.maps, m)
	}
	return bin, d
}

// elfImage is one mapped ELF file: its table and symbols.
type elfImage struct {
	loads []elf.ProgHeader
	table *Table
	syms  []elf.Symbol
}

func (im *elfImage) vaddr(off uint64) uint64 {
	for _, p := range im.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr
		}
	}
	return 0
}

func (im *elfImage) name(vaddr uint64) string {
	for _, s := range im.syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && vaddr >= s.Value && vaddr < s.Value+max(s.Size, 1) {
			return s.Name
		}
	}
	return ""
}

// resolver maps process addresses to images and gives Rules and names.
type resolver struct {
	t      *testing.T
	maps   []dumpMapping
	images map[string]*elfImage
}

func newResolver(t *testing.T, maps []dumpMapping) *resolver {
	return &resolver{t: t, maps: maps, images: map[string]*elfImage{}}
}

func (r *resolver) find(pc uint64) (*elfImage, uint64) {
	i := sort.Search(len(r.maps), func(i int) bool { return r.maps[i].limit > pc })
	if i >= len(r.maps) || r.maps[i].start > pc || !strings.HasPrefix(r.maps[i].path, "/") {
		return nil, 0
	}
	m := r.maps[i]
	im := r.images[m.path]
	if im == nil {
		f, err := elf.Open(m.path)
		if err != nil {
			r.t.Fatalf("opening %s: %v", m.path, err)
		}
		defer f.Close()
		im = &elfImage{}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD {
				im.loads = append(im.loads, p.ProgHeader)
			}
		}
		if im.table, err = FromELF(f, nil, ELFOptions{}); err != nil {
			r.t.Fatalf("unwind table of %s: %v", m.path, err)
		}
		im.syms, _ = f.Symbols()
		dyn, _ := f.DynamicSymbols()
		im.syms = append(im.syms, dyn...)
		r.images[m.path] = im
	}
	return im, im.vaddr(pc - m.start + m.offset)
}

func (r *resolver) rules(pc uint64, leaf bool) (Row, bool) {
	if !leaf {
		pc--
	}
	im, va := r.find(pc)
	if im == nil {
		return Row{}, false
	}
	return im.table.Lookup(va)
}

func (r *resolver) names(pcs []uint64) []string {
	var out []string
	for i, pc := range pcs {
		if i > 0 {
			pc--
		}
		im, va := r.find(pc)
		name := "?"
		if im != nil {
			if n := im.name(va); n != "" {
				name = n
			}
		}
		out = append(out, name)
	}
	return out
}

// TestUnwindSelfDumpGCC unwinds a gcc -O2 program (no frame pointers) from
// its own copied stack, through libc's qsort (no frame pointers either)
// back to main and _start.
func TestUnwindSelfDumpGCC(t *testing.T) {
	for _, flags := range [][]string{{"-O2"}, {"-O2", "-g"}, {"-O2", "-fno-asynchronous-unwind-tables", "-g"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			_, d := runSelfDump(t, "gcc", flags...)
			r := newResolver(t, d.maps)
			res := Unwind(d.regs, d.stack, r.rules, 128, nil)
			names := r.names(res.PCs)
			t.Logf("end %v, %d frame-pointer steps: %v", res.End, res.FPSteps, names)
			// qsort is qsort_r in glibc 2.36, a wrapper elsewhere: either.
			want := []string{"dump_here", "compare", "qsort*", "leaf_level", "mid_level", "top_level", "main"}
			if !subsequence(names, want) {
				t.Fatalf("stack %v lacks the chain %v", names, want)
			}
			if res.End != EndOutermost || res.FPSteps != 0 {
				t.Fatalf("want a complete walk by tables alone, got end %v with %d frame-pointer steps", res.End, res.FPSteps)
			}
			if names[len(names)-1] != "_start" {
				t.Fatalf("outermost frame %q, want _start", names[len(names)-1])
			}
		})
	}
}

// TestUnwindTruncatedCopy cuts the copied stack short: the walk stops where
// the copy ends and says so.
func TestUnwindTruncatedCopy(t *testing.T) {
	_, d := runSelfDump(t, "gcc", "-O2")
	r := newResolver(t, d.maps)
	full := Unwind(d.regs, d.stack, r.rules, 128, nil)
	short := d.stack
	short.Data = short.Data[:64]
	res := Unwind(d.regs, short, r.rules, 128, nil)
	if res.End != EndTruncated || len(res.PCs) >= len(full.PCs) || len(res.PCs) == 0 || res.PCs[0] != d.regs.PC {
		t.Fatalf("truncated walk: end %v, %d of %d frames", res.End, len(res.PCs), len(full.PCs))
	}
	if lim := Unwind(d.regs, d.stack, r.rules, 3, nil); lim.End != EndMaxDepth || len(lim.PCs) != 3 {
		t.Fatalf("max depth 3: end %v, %d frames", lim.End, len(lim.PCs))
	}
}

// subsequence reports whether want appears in names in order; a want
// ending in * matches any name with that prefix.
func subsequence(names, want []string) bool {
	i := 0
	for _, n := range names {
		if i < len(want) && (n == want[i] || strings.HasSuffix(want[i], "*") && strings.HasPrefix(n, strings.TrimSuffix(want[i], "*"))) {
			i++
		}
	}
	return i == len(want)
}
