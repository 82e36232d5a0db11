package flamegraph

import (
	"debug/gosym"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
)

// TestSelfNamesAgreeWithPclntab names every function of the running test
// binary twice: through the runtime's table (what the symboliser now does
// for its own binary) and through the standard library's reader of the
// file's pclntab (debug/gosym: what it did for a stripped Go binary, and
// go test links its binaries stripped); they must agree, and the binary
// must hold no table of its own.
func TestSelfNamesAgreeWithPclntab(t *testing.T) {
	im, ok := runningImage()
	if !ok {
		t.Fatal("the running test binary was not recognised")
	}
	b, err := OpenBinary("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if b.self == nil || b.BuildID != im.buildID || b.gotab != nil {
		t.Fatalf("own binary (build id %q, running %q): named by the runtime %v, pclntab parsed %v", b.BuildID, im.buildID, b.self != nil, b.gotab != nil)
	}
	f, err := openELF("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".gopclntab")
	data, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, f.Section(".text").Addr))
	if err != nil {
		t.Fatal(err)
	}
	checked, differ, unnamed := 0, 0, 0
	for _, fn := range tab.Funcs {
		if fn.End <= fn.Entry+1 {
			continue
		}
		if _, ok := im.runtimeFrame(fn.Entry); !ok {
			unnamed++ // the table's first function: see runtimeName
			continue
		}
		for _, pc := range []uint64{fn.Entry, (fn.Entry + fn.End) / 2, fn.End - 1} {
			got, ok := b.Lookup(pc)
			file, line, want := tab.PCToLine(pc)
			if line <= 0 {
				file, line = "", 0 // no line there, as the runtime says it
			}
			checked++
			if !ok || want == nil || got.Function != printedName(strings.TrimSuffix(want.Name, ".abi0")) || got.File != file || got.Line != line {
				if differ++; differ <= 10 {
					t.Errorf("%#x (in %s): runtime says %+v %v, pclntab %s:%d %v", pc, fn.Name, got, ok, file, line, want)
				}
			}
		}
	}
	if differ > 0 || checked < 3000 || unnamed > 1 {
		t.Fatalf("%d of %d addresses named differently, %d functions unnamed", differ, checked, unnamed)
	}
	if b.Bytes() > 64<<10 {
		t.Fatalf("own binary holds %d bytes; parsing its pclntab held %d and more", b.Bytes(), len(data))
	}
	t.Logf("%d addresses agree; the binary holds %d bytes (its pclntab is %d)", checked, b.Bytes(), len(data))
}

// printedName is a function's name as the runtime prints it (and Go's own
// profiles show it): a generic function's type arguments as [...].
func printedName(name string) string {
	i, j := strings.IndexByte(name, '['), strings.LastIndexByte(name, ']')
	if i < 0 || j <= i {
		return name
	}
	return name[:i] + "[...]" + name[j+1:]
}

// TestSelfNamesInAStrippedBinary runs a stripped copy of this test binary
// (as the container image ships the agent: -ldflags "-s -w") and checks,
// inside it, that its own functions are named without a symbol table and
// without parsing its pclntab into the heap.
func TestSelfNamesInAStrippedBinary(t *testing.T) {
	if os.Getenv("TRIAGE_SELFNAMES_CHILD") == "1" {
		strippedChild(t)
		return
	}
	objcopy, err := exec.LookPath("objcopy")
	if err != nil {
		testenv.Unavailable(t, "objcopy (binutils) not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stripped := t.TempDir() + "/stripped.test"
	if out, err := exec.Command(objcopy, "--strip-all", exe, stripped).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	cmd := exec.Command(stripped, "-test.run=^TestSelfNamesInAStrippedBinary$", "-test.v")
	cmd.Env = append(os.Environ(), "TRIAGE_SELFNAMES_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("stripped child: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func strippedChild(t *testing.T) {
	b, err := OpenBinary("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if b.syms.len() != 0 {
		t.Fatalf("a stripped binary has %d ELF symbols: the copy was not stripped", b.syms.len())
	}
	if b.self == nil || b.gotab != nil {
		t.Fatalf("stripped own binary: named by the runtime %v, pclntab parsed %v", b.self != nil, b.gotab != nil)
	}
	im, _ := runningImage()
	pc := uint64(reflect.ValueOf(selfMarker).Pointer())
	fr, ok := b.Lookup(pc - im.bias)
	if !ok || !strings.HasSuffix(fr.Function, "flamegraph.selfMarker") {
		t.Fatalf("Lookup(selfMarker) = %q %v", fr.Function, ok)
	}
	t.Logf("stripped: selfMarker named %q, cache bytes %d", fr.Function, b.Bytes())
}

// TestStrippedCgoBinaryIsNamedFromPclntab builds a cgo program stripped:
// its .dynsym still exports cgo's C functions, which used to stop the
// symboliser from reading the pclntab, so none of its Go functions had a
// name.
func TestStrippedCgoBinaryIsNamedFromPclntab(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Unavailable(t, "gcc not installed (cgo)")
	}
	prog := t.TempDir() + "/cgostripped"
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", prog, "./testdata/cgostripped")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := OpenBinary(prog)
	if err != nil {
		t.Fatal(err)
	}
	if b.syms.len() == 0 {
		t.Fatal("no .dynsym functions: the program does not show the case")
	}
	f, err := openELF(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, f.Section(".text").Addr))
	if err != nil {
		t.Fatal(err)
	}
	fn := tab.LookupFunc("main.goFunction")
	if fn == nil {
		t.Fatal("main.goFunction not in the program's pclntab")
	}
	if fr, ok := b.Lookup(fn.Entry + 1); !ok || fr.Function != "main.goFunction" || !strings.HasSuffix(fr.File, "main.go") {
		t.Fatalf("Lookup(main.goFunction+1) = %+v %v", fr, ok)
	}
}

// TestSelfNamesInAPIEBinary builds this package's tests as a
// position-independent executable and runs the agreement test inside it:
// there the running image sits at a random base, and every name depends on
// the bias runningImage finds.
func TestSelfNamesInAPIEBinary(t *testing.T) {
	if os.Getenv("TRIAGE_SELFNAMES_PIE") == "1" {
		if im, ok := runningImage(); !ok || im.bias == 0 {
			t.Fatalf("running as a PIE: image %+v %v, want a bias", im, ok)
		}
		return
	}
	if testing.Short() {
		t.Skip("-short: builds this package's tests again")
	}
	bin := t.TempDir() + "/flamegraph-pie.test"
	build := exec.Command("go", "test", "-c", "-buildmode=pie", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c -buildmode=pie: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-test.run=^(TestSelfNamesInAPIEBinary|TestSelfNamesAgreeWithPclntab)$", "-test.v")
	cmd.Env = append(os.Environ(), "TRIAGE_SELFNAMES_PIE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "--- PASS") != 2 {
		t.Fatalf("PIE child: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
