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
// unwinder does for every frame: the table built whole, and read in place
// (the 1,024 functions' rows read on the first pass, kept after).
func BenchmarkLookup(b *testing.B) {
	file, err := os.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Skipf("no libc here: %v", err)
	}
	defer file.Close()
	f, err := elf.NewFile(file)
	if err != nil {
		b.Fatal(err)
	}
	whole, err := FromELF(f, nil, ELFOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rows := whole.Rows()
	pcs := make([]uint64, 0, 1024)
	for i := 0; i < 1024; i++ {
		pcs = append(pcs, rows[(i*7919)%len(rows)].PC+1)
	}
	inPlace, err := FromELF(f, nil, ELFOptions{File: file})
	if err != nil || inPlace.lazy == nil {
		b.Fatalf("libc not read in place: %v", err)
	}
	for name, t := range map[string]*Table{"whole": whole, "in-place": inPlace} {
		b.Run(name, func(b *testing.B) {
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
			b.ReportMetric(float64(t.Bytes()), "table-bytes")
		})
	}
}
