package flamegraph

import (
	"bufio"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-agent/triage/flamegraph/unwind"
	"github.com/triage-agent/triage/internal/testenv"
)

// liveSelfDump runs unwind/testdata/selfdump.c (gcc -O2, no frame
// pointers) until it has dumped its registers and stack, and keeps it
// alive for the test.
func liveSelfDump(t *testing.T) (pid uint32, regs unwind.Regs, stack unwind.Stack) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Unavailable(t, "gcc not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "selfdump")
	if out, err := exec.Command("gcc", "-O2", "-o", bin, "unwind/testdata/selfdump.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, filepath.Join(dir, "regs"), filepath.Join(dir, "maps"), "wait")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "dumped" {
		t.Fatalf("selfdump said %q", line)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "regs"))
	if err != nil || len(raw) < 32 {
		t.Fatalf("regs: %v", err)
	}
	regs = unwind.Regs{PC: binary.LittleEndian.Uint64(raw), SP: binary.LittleEndian.Uint64(raw[8:]), BP: binary.LittleEndian.Uint64(raw[16:])}
	return uint32(cmd.Process.Pid), regs, unwind.Stack{Addr: regs.SP, Data: raw[32:]}
}

func userNames(s *Symbolizer, pid uint32, pcs []uint64) []string {
	var out []string
	for i, pc := range pcs {
		out = append(out, s.UserLocation(pid, pc, i == 0).Name())
	}
	return out
}

// TestUnwindUserLiveProcess walks a live gcc -O2 process's copied stack
// through the symboliser (maps, binaries through /proc/PID/map_files,
// unwind tables, libc's debug file where installed).
func TestUnwindUserLiveProcess(t *testing.T) {
	pid, regs, stack := liveSelfDump(t)
	var builds []uint64
	s := NewSymbolizer(SymbolizerConfig{AfterBuild: func(n uint64) { builds = append(builds, n) }})
	if _, err := s.Capture(pid); err != nil {
		t.Fatal(err)
	}
	res := s.UnwindUser(pid, regs, stack, nil, nil)
	names := userNames(s, pid, res.PCs)
	t.Logf("%v (fallback %q %q), cache %d KiB, builds allocated %v bytes", names, res.Reason, res.Module, s.CacheBytes()>>10, builds)
	// Each binary read and each unwind table built is reported, with what
	// the process allocated meanwhile: at least the tables it keeps.
	var allocated uint64
	for _, n := range builds {
		allocated += n
	}
	if len(builds) < 4 || allocated < uint64(s.CacheBytes()) {
		t.Fatalf("AfterBuild saw %d builds allocating %d bytes; want two binaries read and their two unwind tables, at least the cache's %d bytes",
			len(builds), allocated, s.CacheBytes())
	}
	// libc's names depend on its debug file: qsort_r or __GI___qsort_r,
	// __libc_start_main or __libc_start_main_impl.
	want := []string{"dump_here", "compare", "~qsort_r", "leaf_level", "mid_level", "top_level", "main", "~libc_start_main", "_start"}
	if !containsChain(names, want) {
		t.Fatalf("stack %v lacks %v", names, want)
	}
	if res.Reason != "" {
		t.Fatalf("fell back to frame pointers: %s (%s)", res.Reason, res.Module)
	}
	if s.FramePointerSound(pid) {
		t.Fatal("a C process is not frame-pointer sound")
	}
	// The frames between compare and qsort_r are libc's static msort
	// helpers: named by libc's debug file when libc6-dbg is installed,
	// else module+offset, never dropped.
	for _, n := range names {
		if n == "" {
			t.Fatalf("unnamed frame in %v", names)
		}
	}

	// A cache too small for libc's table (read in place, its search table
	// alone is 30 kB): libc is walked by frame pointer (which fails inside
	// it, since glibc has none) and says so.
	tiny := NewSymbolizer(SymbolizerConfig{MaxCacheBytes: 16 << 10})
	if _, err := tiny.Capture(pid); err != nil {
		t.Fatal(err)
	}
	res = tiny.UnwindUser(pid, regs, stack, nil, nil)
	if res.Reason != FallbackOverBudget || !strings.HasPrefix(res.Module, "libc") {
		t.Fatalf("tiny cache: reason %q module %q, want %q in libc", res.Reason, res.Module, FallbackOverBudget)
	}
	if got := userNames(tiny, pid, res.PCs); len(got) < 2 || got[0] != "dump_here" || got[1] != "compare" {
		t.Fatalf("tiny cache: the frames before libc must still unwind: %v", got)
	}
	if b := tiny.CacheBytes(); b > 16<<10+512<<10 {
		t.Fatalf("tiny cache holds %d bytes", b)
	}
}

// containsChain reports whether want appears in names in order; a want
// starting with ~ matches names containing the rest.
func containsChain(names, want []string) bool {
	i := 0
	for _, n := range names {
		if i < len(want) && (n == want[i] || strings.HasPrefix(want[i], "~") && strings.Contains(n, want[i][1:])) {
			i++
		}
	}
	return i == len(want)
}

func TestParsePerfMap(t *testing.T) {
	in := "7f3a1c004140 1a4 LazyCompile:*hotLoop /tmp/hot.js:3:17\n" +
		"0x7f3a1c004300 0x88 Function:~<anonymous> node:internal/main:1:1\n" +
		"garbage\n7f3a1c004140 20 LazyCompile:*hotLoop2 /tmp/hot.js:9:1\n0 0 zero\n"
	pm, err := ParsePerfMap(strings.NewReader(in), 0)
	if err != nil || pm.Len() != 3 {
		t.Fatalf("%d entries, %v", pm.Len(), err)
	}
	for addr, want := range map[uint64]string{
		0x7f3a1c004140: "LazyCompile:*hotLoop2 /tmp/hot.js:9:1", // the later line wins at a reused address
		0x7f3a1c004170: "LazyCompile:*hotLoop /tmp/hot.js:3:17", // past the short entry: the longer one still covers it
		0x7f3a1c004300: "Function:~<anonymous> node:internal/main:1:1",
	} {
		if got, ok := pm.Lookup(addr); !ok || got != want {
			t.Errorf("Lookup(%x) = %q %v, want %q", addr, got, ok, want)
		}
	}
	if _, ok := pm.Lookup(0x7f3a1c0042e4); ok {
		t.Error("an address between entries was named")
	}
	// The memory cap keeps the last lines of the file.
	capped, _ := ParsePerfMap(strings.NewReader(strings.Repeat("1000 10 old\n", 500)+"9000 10 newest\n"), 2000)
	if capped.Bytes() > 2000 {
		t.Fatalf("capped map holds %d bytes", capped.Bytes())
	}
	if n, ok := capped.Lookup(0x9000); !ok || n != "newest" {
		t.Fatalf("capped map lost the newest entry: %q %v", n, ok)
	}
	// A file over the size limit keeps its first part and says so.
	old := maxPerfMapBytes
	maxPerfMapBytes = 100
	defer func() { maxPerfMapBytes = old }()
	big, err := ParsePerfMap(strings.NewReader(strings.Repeat("1000 10 x\n", 100)), 0)
	if err == nil || big.Len() == 0 || big.Len() > 11 {
		t.Fatalf("over the limit: %d entries, %v", big.Len(), err)
	}
}
