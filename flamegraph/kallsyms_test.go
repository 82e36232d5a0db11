package flamegraph

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestParseKallsyms(t *testing.T) {
	in := `ffffffff81000000 T _stext
ffffffff81001000 t do_one
ffffffff81002000 D some_data
ffffffff81003000 T do_two
ffffffffc0000000 t mod_fn	[nf_tables]
`
	ks, err := ParseKallsyms(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if ks.Len() != 4 {
		t.Fatalf("kept %d symbols, want 4 text symbols", ks.Len())
	}
	for _, c := range []struct {
		addr      uint64
		name, mod string
		ok        bool
	}{
		{0xffffffff81001010, "do_one", "", true},
		{0xffffffff81002500, "do_one", "", true}, // data symbols are skipped
		{0xffffffff81003000, "do_two", "", true},
		{0xffffffffc0000042, "mod_fn", "nf_tables", true},
		{0xffffffff80000000, "", "", false},
	} {
		name, mod, ok := ks.Lookup(c.addr)
		if name != c.name || mod != c.mod || ok != c.ok {
			t.Errorf("Lookup(%x) = %q %q %v, want %q %q %v", c.addr, name, mod, ok, c.name, c.mod, c.ok)
		}
	}
}

func TestParseKallsymsRestricted(t *testing.T) {
	_, err := ParseKallsyms(strings.NewReader("0000000000000000 T _stext\n0000000000000000 t foo\n"))
	if !errors.Is(err, ErrKallsymsRestricted) {
		t.Fatalf("err = %v, want ErrKallsymsRestricted", err)
	}
}

func TestLoadKernelSymbolsHere(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("kallsyms addresses are hidden from non-root")
	}
	ks, err := LoadKernelSymbols()
	if err != nil {
		t.Fatal(err)
	}
	// schedule is in every kernel; its own address must name it.
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "schedule" {
			addr, err := strconv.ParseUint(fields[0], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			if name, _, ok := ks.Lookup(addr + 1); !ok || name != "schedule" {
				t.Fatalf("Lookup(schedule+1) = %q %v", name, ok)
			}
			return
		}
	}
	t.Fatal("no schedule symbol in /proc/kallsyms")
}

// countingSource serves kallsyms text, each open from the current text,
// and counts the opens.
type countingSource struct {
	text  string
	opens int
}

func (c *countingSource) open() (io.ReadCloser, error) {
	c.opens++
	return io.NopCloser(strings.NewReader(c.text)), nil
}

func TestKernelNamesAreReadWhenNeededAndKept(t *testing.T) {
	src := &countingSource{text: `ffffffff81000000 T _stext
ffffffff81001000 t do_one
ffffffff81001000 t do_one_alias
ffffffff81003000 T do_two
ffffffff81005000 T do_three
`}
	ks, err := NewKernelSymbols(src.open)
	if err != nil {
		t.Fatal(err)
	}
	if ks.Named() != 0 || ks.Len() != 4 {
		t.Fatalf("after loading: %d named, %d addresses; want 0 and 4 (no names held, aliases one address)", ks.Named(), ks.Len())
	}
	if err := ks.Resolve([]uint64{0xffffffff81001004, 0xffffffff81003010, 0xffffffff81001008}); err != nil {
		t.Fatal(err)
	}
	if src.opens != 2 || ks.Named() != 2 {
		t.Fatalf("after one Resolve: %d opens, %d named; want 2 and 2", src.opens, ks.Named())
	}
	for addr, want := range map[uint64]string{0xffffffff81001004: "do_one_alias", 0xffffffff81003010: "do_two"} {
		if name, _, ok := ks.Lookup(addr); !ok || name != want {
			t.Errorf("Lookup(%x) = %q %v, want %q (the last symbol at an address)", addr, name, ok, want)
		}
	}
	if src.opens != 2 || ks.Reads() != 2 {
		t.Fatalf("Lookup of resolved symbols read the source again (%d opens, %d reads counted)", src.opens, ks.Reads())
	}
	if name, _, ok := ks.Lookup(0xffffffff81005001); !ok || name != "do_three" || src.opens != 3 {
		t.Fatalf("Lookup of a new symbol = %q %v after %d opens, want do_three after 3", name, ok, src.opens)
	}
}

func TestKernelSymbolsFollowAModuleLoadedSinceStart(t *testing.T) {
	src := &countingSource{text: "ffffffff81000000 T _stext\nffffffff81001000 t do_one\n"}
	ks, err := NewKernelSymbols(src.open)
	if err != nil {
		t.Fatal(err)
	}
	// Before the load, the module's address fell in do_one's range; after
	// it, the module's function must name it.
	src.text += "ffffffffc0000000 t mod_fn\t[nf_tables]\n"
	name, mod, ok := ks.Lookup(0xffffffffc0000042)
	if !ok || name != "mod_fn" || mod != "nf_tables" {
		t.Fatalf("Lookup after a module load = %q %q %v, want mod_fn nf_tables", name, mod, ok)
	}
	if name, _, ok := ks.Lookup(0xffffffff81001002); !ok || name != "do_one" {
		t.Fatalf("Lookup(do_one+2) = %q %v after the reload", name, ok)
	}
	if ks.Len() != 3 {
		t.Fatalf("%d addresses after the reload, want 3", ks.Len())
	}
	// Unloaded again: the module's symbol is gone and its address is
	// do_one's once more, after at most two passes.
	src.text = "ffffffff81000000 T _stext\nffffffff81001000 t do_one\n"
	before := src.opens
	if err := ks.Resolve([]uint64{0xffffffffc0000042}); err != nil {
		t.Fatal(err)
	}
	if src.opens-before > 2 {
		t.Fatalf("one Resolve read the source %d times, want at most 2", src.opens-before)
	}
}

func TestKernelSymbolWithoutNameCostsOnePass(t *testing.T) {
	src := &countingSource{text: "ffffffff81000000 T _stext\nffffffff81001000 t do_one\n"}
	ks, err := NewKernelSymbols(src.open)
	if err != nil {
		t.Fatal(err)
	}
	// The file loses every symbol (kptr_restrict turned on since start):
	// the pass fails, and the frame stays unnamed.
	src.text = "0000000000000000 T _stext\n0000000000000000 t do_one\n"
	if _, _, ok := ks.Lookup(0xffffffff81001002); ok {
		t.Fatal("named a frame from a file that hides its addresses")
	}
	if err := ks.Resolve([]uint64{0xffffffff81001002}); !errors.Is(err, ErrKallsymsRestricted) {
		t.Fatalf("Resolve = %v, want ErrKallsymsRestricted", err)
	}
	// A file that changes under every read (modules loading and unloading
	// without pause): after two passes the symbol is remembered as
	// unnamed, and asking again reads nothing.
	a := "ffffffff81000000 T _stext\nffffffff81001000 t do_one\n"
	b := "ffffffff81000000 T _stext\nffffffff81001800 t do_two\n"
	flip := &flippingSource{texts: []string{a, b}}
	ks, err = NewKernelSymbols(flip.open)
	if err != nil {
		t.Fatal(err)
	}
	if name, _, ok := ks.Lookup(0xffffffff81001900); ok {
		t.Fatalf("named %q from a file that never held still", name)
	}
	if flip.opens != 3 {
		t.Fatalf("%d opens, want 3 (the load and two passes)", flip.opens)
	}
	for i := 0; i < 3; i++ {
		ks.Lookup(0xffffffff81001900)
	}
	if flip.opens != 3 {
		t.Fatalf("an unnamed symbol was read again: %d opens, want 3", flip.opens)
	}
}

// flippingSource serves its texts in turn.
type flippingSource struct {
	texts []string
	opens int
}

func (f *flippingSource) open() (io.ReadCloser, error) {
	t := f.texts[f.opens%len(f.texts)]
	f.opens++
	return io.NopCloser(strings.NewReader(t)), nil
}

func BenchmarkLoadKernelSymbols(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("kallsyms addresses are hidden from non-root")
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := LoadKernelSymbols(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveKernelNames is one window's names pass: 2,000 symbols
// not named before.
func BenchmarkResolveKernelNames(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("kallsyms addresses are hidden from non-root")
	}
	ks, err := LoadKernelSymbols()
	if err != nil {
		b.Fatal(err)
	}
	ks.mu.Lock()
	var pcs []uint64
	for i := 0; i < len(ks.addrs); i += max(1, len(ks.addrs)/2000) {
		pcs = append(pcs, ks.addrs[i]+1)
	}
	ks.mu.Unlock()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ks.mu.Lock()
		clear(ks.names)
		ks.mu.Unlock()
		if err := ks.Resolve(pcs); err != nil {
			b.Fatal(err)
		}
	}
}
