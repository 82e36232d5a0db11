package unwind

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkBuild builds the unwind table of a large shared library (ONNX
// Runtime's where TRIAGE_ONNXRUNTIME_LIB names it, as make exports it, else
// libc), from its .eh_frame read once. B/op is what the build allocates:
// its rows while they are emitted and the table itself; the table's own
// size is reported beside it.
func BenchmarkBuild(b *testing.B) {
	path := os.Getenv("TRIAGE_ONNXRUNTIME_LIB")
	if path == "" {
		path = "/lib/x86_64-linux-gnu/libc.so.6"
	}
	f, err := elf.Open(path)
	if err != nil {
		b.Skipf("no large library to build from here (%v)", err)
	}
	defer f.Close()
	data, addr, err := ehFrame(f, 64<<20)
	if err != nil || data == nil {
		b.Fatalf("%s: .eh_frame: %v", path, err)
	}
	secs := []CFI{{Kind: EHFrame, Data: data, Addr: addr}}
	b.Logf("%s: %d bytes of .eh_frame", filepath.Base(path), len(data))
	b.ReportAllocs()
	var t *Table
	for b.Loop() {
		if t, err = Build(secs, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(t.Len()), "rows")
	b.ReportMetric(float64(t.Bytes()), "table-bytes")
}

// BenchmarkLookup looks up addresses spread over libc's table, as the
// unwinder does for every frame.
func BenchmarkLookup(b *testing.B) {
	f, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Skipf("no libc here: %v", err)
	}
	defer f.Close()
	t, err := FromELF(f, nil, ELFOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rows := t.Rows()
	pcs := make([]uint64, 0, 1024)
	for i := 0; i < 1024; i++ {
		pcs = append(pcs, rows[(i*7919)%len(rows)].PC+1)
	}
	b.ReportAllocs()
	found := 0
	for i := 0; b.Loop(); i++ {
		if _, ok := t.Lookup(pcs[i%len(pcs)]); ok {
			found++
		}
	}
	if found == 0 {
		b.Fatal("no address found")
	}
}
