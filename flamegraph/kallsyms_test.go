package flamegraph

import (
	"bufio"
	"errors"
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
