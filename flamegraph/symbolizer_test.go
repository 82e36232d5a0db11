package flamegraph

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
)

//go:noinline
func symbolizerTarget() int { return 42 }

// TestSymbolizeOwnProcess names a function of this (Go) test binary from its
// address in the running process: maps + pclntab + PIE arithmetic.
func TestSymbolizeOwnProcess(t *testing.T) {
	s := NewSymbolizer(SymbolizerConfig{})
	pid := uint32(os.Getpid())
	if _, err := s.Capture(pid); err != nil {
		t.Fatal(err)
	}
	pc := uint64(reflect.ValueOf(symbolizerTarget).Pointer())
	loc := s.UserLocation(pid, pc+1, true)
	if !strings.HasSuffix(loc.Frame.Function, ".symbolizerTarget") {
		t.Fatalf("UserLocation = %+v, want symbolizerTarget", loc)
	}
	if loc.BuildID == "" || !strings.HasSuffix(loc.Frame.File, "symbolizer_test.go") || loc.Frame.Line == 0 {
		t.Fatalf("want build id and file:line, got %+v", loc)
	}
	// An address in no mapping stays visible as [unknown]+0x...
	if n := s.UserLocation(pid, 0x10, true).Name(); n != "[unknown]+0x10" {
		t.Fatalf("unmapped address named %q", n)
	}
	// A process never captured: frames are not dropped, just unnamed.
	if n := s.UserLocation(1<<30, pc, true).Name(); !strings.HasPrefix(n, "[unknown]+0x") {
		t.Fatalf("unknown process frame named %q", n)
	}
}

// TestSymbolizeCBinary names C functions from the ELF symbol table, and
// keeps unnamed addresses as module+offset.
func TestSymbolizeCBinary(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Unavailable(t, "gcc not installed")
	}
	bin := filepath.Join(t.TempDir(), "hotc")
	if out, err := exec.Command("gcc", "-O1", "-fno-inline", "-o", bin, "../testdata/flamegraph/hotc/hot.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	b, err := OpenBinary(bin)
	if err != nil {
		t.Fatal(err)
	}
	if b.IsGo || b.BuildID == "" {
		t.Fatalf("C binary: IsGo %v build id %q", b.IsGo, b.BuildID)
	}
	f, _ := elf.Open(bin)
	defer f.Close()
	syms, _ := f.Symbols()
	var hot elf.Symbol
	for _, s := range syms {
		if s.Name == "hot_function" {
			hot = s
		}
	}
	if hot.Value == 0 {
		t.Fatal("no hot_function in the symbol table")
	}
	fr, ok := b.Lookup(hot.Value + 3)
	if !ok || fr.Function != "hot_function" {
		t.Fatalf("Lookup(hot_function+3) = %+v %v", fr, ok)
	}
	// The file offset of the symbol, mapped through the PT_LOAD segments,
	// gives its address back (what a PIE mapping's offset arithmetic needs).
	var off uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && hot.Value >= p.Vaddr && hot.Value < p.Vaddr+p.Filesz {
			off = hot.Value - p.Vaddr + p.Off
		}
	}
	if va, ok := b.VAddr(off); !ok || va != hot.Value {
		t.Fatalf("VAddr(%#x) = %#x %v, want %#x", off, va, ok, hot.Value)
	}
	if _, err := OpenBinary("/proc/self/status"); err == nil {
		t.Fatal("a text file opened as ELF")
	}
}

func TestParseMaps(t *testing.T) {
	in := `55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 123 /usr/bin/app
55d0c0a01000-55d0c0a05000 r-xp 00001000 fd:01 123 /usr/bin/app
7f0000000000-7f0000100000 r-xp 00028000 fd:01 456 /lib/x86_64-linux-gnu/libc.so.6
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
garbage line
7f1000000000-7f1000001000 rwxp 00000000 00:00 0
`
	ms, err := ParseMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 {
		t.Fatalf("kept %d executable mappings, want 4: %+v", len(ms), ms)
	}
	pi := &ProcessInfo{Mappings: ms}
	if m := pi.find(0x55d0c0a02000); m == nil || m.Path != "/usr/bin/app" || m.Offset != 0x1000 {
		t.Fatalf("find = %+v", m)
	}
	if m := pi.find(0x55d0c0a00500); m != nil {
		t.Fatalf("non-executable mapping found: %+v", m)
	}
	loc := Location{Address: 0x7f0000000010, Mapping: &ms[1]}
	if n := loc.Name(); n != "libc.so.6+0x28010" {
		t.Fatalf("unnamed frame %q, want libc.so.6+0x28010", n)
	}
}

func TestParseStartTime(t *testing.T) {
	stat := "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10"
	if got := parseStartTime(stat); got != 98765 {
		t.Fatalf("start time %d, want 98765", got)
	}
	if got := parseStartTime("garbage"); got != 0 {
		t.Fatalf("garbage start time %d", got)
	}
}

func TestContainerID(t *testing.T) {
	id := strings.Repeat("ab12", 16)
	for _, c := range []struct{ path, want string }{
		{"/docker/" + id, id},
		{"/system.slice/docker-" + id + ".scope", id},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-" + id + ".scope", id},
		{"/kubepods/burstable/pod1234/" + id, id},
		{"/machine.slice/crio-" + id + ".scope", id},
		{"/user.slice/user-1000.slice/session-2.scope", ""},
		{"/", ""},
	} {
		if got := ContainerID(c.path); got != c.want {
			t.Errorf("ContainerID(%q) = %q, want %q", c.path, got, c.want)
		}
	}
	path, container := ParseCgroupFile("12:memory:/docker/" + id + "\n0::/system.slice/docker-" + id + ".scope\n")
	if path != "/system.slice/docker-"+id+".scope" || container != id {
		t.Fatalf("ParseCgroupFile = %q %q", path, container)
	}
}

func TestGoPackage(t *testing.T) {
	for name, want := range map[string]string{
		"main.main":                 "main",
		"net/http.(*Server).Serve":  "net/http",
		"github.com/a/b.(*T).M":     "github.com/a/b",
		"github.com/a/b/c.f.func1":  "github.com/a/b/c",
		"memcpy":                    "",
		"finish_task_switch.isra.0": "",
		"hot_function.cold":         "",
		"[unknown]+0x10":            "",
		"libc.so.6+0x2724a":         "",
	} {
		if got := goPackage(name); got != want {
			t.Errorf("goPackage(%q) = %q, want %q", name, got, want)
		}
	}
}
