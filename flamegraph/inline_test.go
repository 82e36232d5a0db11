package flamegraph

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
)

// buildNoFP compiles testdata/flamegraph/nofp/<src> with cc -O2 -g.
func buildNoFP(t *testing.T, cc, src string) string {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		testenv.Unavailable(t, cc+" not installed")
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(src, filepath.Ext(src)))
	if out, err := exec.Command(cc, "-O2", "-g", "-o", bin, "../testdata/flamegraph/nofp/"+src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	return bin
}

// addr2line returns binutils' function names at vaddr, innermost first,
// demangled and without parameter lists.
func addr2line(t *testing.T, bin string, vaddr uint64) []string {
	names, _ := addr2lineRun(t, bin, vaddr)
	return names
}

// addr2lineLine is the line addr2line gives for frame i (0 innermost).
func addr2lineLine(t *testing.T, bin string, vaddr uint64, i int) int {
	_, lines := addr2lineRun(t, bin, vaddr)
	if i >= len(lines) {
		return 0
	}
	return lines[i]
}

func addr2lineRun(t *testing.T, bin string, vaddr uint64) ([]string, []int) {
	t.Helper()
	out, err := exec.Command("addr2line", "-f", "-i", "-C", "-e", bin, "0x"+strconv.FormatUint(vaddr, 16)).Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var names []string
	var nums []int
	for i := 0; i+1 < len(lines); i += 2 {
		n := lines[i]
		if j := strings.IndexByte(n, '('); j > 0 {
			n = n[:j]
		}
		names = append(names, n)
		loc := lines[i+1]
		if j := strings.LastIndexByte(loc, ':'); j >= 0 {
			num, _ := strconv.Atoi(strings.Fields(loc[j+1:] + " ")[0])
			nums = append(nums, num)
		}
	}
	return names, nums
}

// TestInlineFramesAgreeWithAddr2line walks every address of the hot leaf
// of the C and C++ targets and compares the inline chain with binutils'
// addr2line -i; the inlined function must appear at some of them.
func TestInlineFramesAgreeWithAddr2line(t *testing.T) {
	if _, err := exec.LookPath("addr2line"); err != nil {
		testenv.Unavailable(t, "addr2line (binutils) not installed")
	}
	for _, c := range []struct{ cc, src, leaf, inlined string }{
		{"gcc", "hot.c", "hot_leaf", "mix_step"},
		{"g++", "hot.cpp", "shapes::Kernel<3>::run", "shapes::blend"},
	} {
		t.Run(c.src, func(t *testing.T) {
			bin := buildNoFP(t, c.cc, c.src)
			b, err := OpenBinary(bin)
			if err != nil {
				t.Fatal(err)
			}
			if b.inline == nil {
				t.Fatalf("no inline index: %s", b.InlineErr)
			}
			var leaf struct{ addr, size uint64 }
			b.syms.each(func(addr, size uint64, name string) {
				if demangleName(name) == c.leaf {
					leaf.addr, leaf.size = addr, size
				}
			})
			if leaf.size == 0 {
				t.Fatalf("no symbol %s", c.leaf)
			}
			inlinedAt := 0
			for va := leaf.addr; va < leaf.addr+leaf.size; va++ {
				var got []string
				for _, f := range b.Frames(va) {
					got = append(got, f.Function)
				}
				want := addr2line(t, bin, va)
				if strings.Join(got, " <- ") != strings.Join(want, " <- ") {
					t.Fatalf("at 0x%x: Frames %v, addr2line %v", va, got, want)
				}
				if len(got) == 2 && got[0] == c.inlined && got[1] == c.leaf {
					inlinedAt++
				}
			}
			if inlinedAt == 0 {
				t.Fatalf("%s never appears inlined in %s", c.inlined, c.leaf)
			}
			// The caller frame carries the line of the call (DWARF
			// call_line), which addr2line prints as the caller's line.
			for va := leaf.addr; va < leaf.addr+leaf.size; va++ {
				if fs := b.Frames(va); len(fs) == 2 {
					if want := addr2lineLine(t, bin, va, 1); fs[1].Line != want || want == 0 {
						t.Fatalf("inlined call site %+v, addr2line says line %d", fs[1], want)
					}
					break
				}
			}
			t.Logf("%d of %d addresses of %s are in inlined %s; index %d bytes", inlinedAt, leaf.size, c.leaf, c.inlined, b.inline.bytes)
		})
	}
}

func TestDemangleName(t *testing.T) {
	for in, want := range map[string]string{
		"_ZN6shapes6KernelILi3EE3runEm":          "shapes::Kernel<3>::run",
		"_ZNSt6vectorIiSaIiEE9push_backERKi":     "std::vector<int, std::allocator<int> >::push_back",
		"_ZN4core3fmt5write17h0123456789abcdefE": "core::fmt::write", // Rust legacy: the hash goes
		"_RNvCs1234_7mycrate4main":               "mycrate::main",    // Rust v0
		"_Z3fooPKc.cold":                         "foo",
		"hot_function":                           "hot_function",
		"main.main":                              "main.main",
		"_Zjunk":                                 "_Zjunk", // not a valid mangling: unchanged
	} {
		if got := demangleName(in); got != want {
			t.Errorf("demangleName(%q) = %q, want %q", in, got, want)
		}
	}
}

// SymbolizerConfig.MaxDWARFBytes bounds the DWARF read for inline frames:
// a binary whose DWARF is larger is named without them (and says why),
// one under it gets them.
func TestMaxDWARFBytesBoundsTheRead(t *testing.T) {
	bin := buildNoFP(t, "gcc", "hot.c")
	for _, c := range []struct {
		readCap    int
		wantInline bool
	}{{0, true}, {1 << 10, false}} {
		s := &Symbolizer{cfg: SymbolizerConfig{MaxCacheBytes: DefaultMaxCacheBytes, MaxDWARFBytes: c.readCap}}
		b, err := openBinary(bin, s.binaryOptions(1))
		if err != nil {
			t.Fatal(err)
		}
		if got := b.inline != nil; got != c.wantInline {
			t.Errorf("MaxDWARFBytes %d: inline index %v (%s), want %v", c.readCap, got, b.InlineErr, c.wantInline)
		}
		if !c.wantInline && !strings.Contains(b.InlineErr, "limit") {
			t.Errorf("MaxDWARFBytes %d: InlineErr %q does not say the limit", c.readCap, b.InlineErr)
		}
	}
}
