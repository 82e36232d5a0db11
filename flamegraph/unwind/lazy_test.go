package unwind

import (
	"debug/elf"
	"os"
	"testing"
)

// TestLazyTableAgreesWithTheWholeOne reads each file's table in place and
// whole, and asks both at every row's address, one byte before it and one
// after, and at every row's last byte: the rules in force must be the
// same.
// The files: a gcc -O2 program, libc, libstdc++, python3.11, and ONNX
// Runtime where TRIAGE_ONNXRUNTIME_LIB names it (make exports it).
func TestLazyTableAgreesWithTheWholeOne(t *testing.T) {
	bin, _ := runSelfDump(t, "gcc", "-O2")
	paths := []string{bin, "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/bin/python3.11"}
	if p := os.Getenv("TRIAGE_ONNXRUNTIME_LIB"); p != "" {
		paths = append(paths, p)
	}
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: not on this machine", path)
			continue
		}
		t.Run(path, func(t *testing.T) {
			file, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			f, err := elf.NewFile(file)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := FromELF(f, nil, ELFOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lazy, err := FromELF(f, nil, ELFOptions{File: file})
			if err != nil {
				t.Fatal(err)
			}
			if lazy.lazy == nil {
				t.Fatal("not read in place: the file has .eh_frame and its search table")
			}
			rows := whole.Rows()
			checked, differ := 0, 0
			for i, r := range rows {
				pcs := []uint64{r.PC, r.PC + 1}
				if r.PC > 0 {
					pcs = append(pcs, r.PC-1)
				}
				if i+1 < len(rows) && rows[i+1].PC > r.PC+2 {
					pcs = append(pcs, rows[i+1].PC-1)
				}
				for _, pc := range pcs {
					w, wok := whole.Lookup(pc)
					g, gok := lazy.Lookup(pc)
					// The rule must agree, not where its row starts: a whole
					// table merges a rule that goes on into the next
					// function's first row.
					w.PC, g.PC = 0, 0
					checked++
					if wok != gok || wok && w != g {
						if differ++; differ <= 10 {
							t.Errorf("%#x: in place %+v %v, whole %+v %v", pc, g, gok, w, wok)
						}
					}
				}
			}
			if differ > 0 || checked < 100 {
				t.Fatalf("%d of %d lookups differ", differ, checked)
			}
			t.Logf("%d lookups agree; %d rows whole in %d bytes, read in place %d bytes after every function was read once",
				checked, whole.Len(), whole.Bytes(), lazy.Bytes())
		})
	}
}
