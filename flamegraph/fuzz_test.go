package flamegraph

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"testing"

	"github.com/triage-agent/triage/flamegraph/unwind"
)

// The ELF, DWARF and perf-map readers read other tenants' files as root:
// arbitrary bytes must give an error or a bounded result, never a panic or
// an allocation out of proportion to the input. Seeds are in
// testdata/fuzz/<FuzzName>: a small gcc -O2 -g program with one inlined
// function (whole, and its DWARF sections), and Node-style perf maps.

// FuzzELF reads a file as the symboliser does: symbols, build id, the
// inline index from its DWARF, and its unwind table. Its seed is a whole
// 10 KiB binary: run it with -fuzzminimizetime 2s, or the fuzzer spends a
// minute minimising each new input with the execs counter standing still.
func FuzzELF(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			return
		}
		opts := binaryOptions{maxSection: 1 << 20, maxDWARF: 1 << 20, maxIndex: 1 << 20}.withDefaults()
		b, err := newBinary(ef, opts)
		if err != nil {
			return
		}
		b.addInline(ef, opts)
		b.syms.each(func(addr, _ uint64, _ string) { b.Frames(addr) })
		if tab, err := unwind.FromELF(ef, nil, unwind.ELFOptions{MaxTableBytes: 1 << 20, MaxSectionBytes: 1 << 20}); err == nil && tab.Bytes() > 1<<20+1024 {
			t.Fatalf("unwind table of %d bytes over its cap", tab.Bytes())
		}
	})
}

// FuzzDWARFInline builds the inline index from raw .debug_abbrev,
// .debug_info and .debug_str bytes.
func FuzzDWARFInline(f *testing.F) {
	f.Fuzz(func(t *testing.T, abbrev, info, str []byte) {
		d, err := dwarf.New(abbrev, nil, nil, info, nil, nil, nil, str)
		if err != nil {
			return
		}
		idx, err := buildInlineIndex(d, len(info), 1<<20)
		if err != nil {
			return
		}
		for _, s := range idx.segs {
			idx.frames(s.pc)
		}
	})
}

func FuzzPerfMap(f *testing.F) {
	f.Add([]byte("3ef8a3c0a0c0 1a4 LazyCompile:*hot /app/x.js:3:13\n0x1000 0x10 stub\n"), 0)
	f.Fuzz(func(t *testing.T, data []byte, maxBytes int) {
		pm, _ := ParsePerfMap(bytes.NewReader(data), maxBytes%(1<<16))
		if pm.Len() > len(data)/5+1 {
			t.Fatalf("%d entries from %d bytes", pm.Len(), len(data))
		}
		for _, e := range pm.entries {
			if name, ok := pm.Lookup(e.start); !ok || name == "" {
				t.Fatalf("entry at 0x%x not found", e.start)
			}
		}
	})
}
