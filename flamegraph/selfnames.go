package flamegraph

import (
	"debug/elf"
	"os"
	"reflect"
	"runtime"
	"sync"
)

// The agent profiles itself, and the processes running its own binary (a
// bench, a second agent) map the same file. Their Go functions are named
// from the running program's own function table (runtime.FuncForPC reads
// the pclntab the process already maps) rather than from a copy of the
// binary's ELF symbol table in the heap: 1.8 MB for the agent's 26k
// symbols, the largest table the symboliser kept after ONNX Runtime's
// unwind rows. Symbols the runtime does not know (cgo's C code, the
// linker's stubs) are still kept from the ELF table.

// selfImage is the running executable: its build id, and what to add to
// one of its ELF virtual addresses to get this process's program counter
// (0 unless it is position-independent).
type selfImage struct {
	buildID string
	bias    uint64
}

var (
	selfOnce sync.Once
	self     selfImage
	selfOK   bool
)

// selfMarker is a function of this binary whose program counter is
// turned into an ELF virtual address, as any sampled one is, to find the
// bias.
func selfMarker() {}

// runningImage reads the running executable's build id and bias once; ok
// is false where /proc/self/exe or /proc/self/maps cannot be read, and
// then the own binary is named from its files like any other. It needs no
// symbol table: the shipped image's binary is stripped (-s -w), where the
// ELF table is empty and naming fell back to parsing the whole pclntab
// (debug/gosym) into the heap.
func runningImage() (selfImage, bool) {
	selfOnce.Do(func() {
		f, err := elf.Open("/proc/self/exe")
		if err != nil {
			return
		}
		defer f.Close()
		id := buildID(f)
		text := f.Section(".text")
		if id == "" || text == nil || f.Section(".gopclntab") == nil {
			return
		}
		fn := runtime.FuncForPC(reflect.ValueOf(selfMarker).Pointer())
		if fn == nil {
			return
		}
		pc := uint64(fn.Entry())
		pi, err := ReadProcess(uint32(os.Getpid()))
		if err != nil {
			return
		}
		m := pi.find(pc)
		if m == nil {
			return
		}
		off := pc - m.Start + m.Offset
		for _, p := range f.Progs {
			if p.Type != elf.PT_LOAD || off < p.Off || off >= p.Off+p.Filesz {
				continue
			}
			vaddr := off - p.Off + p.Vaddr
			if vaddr < text.Addr || vaddr >= text.Addr+text.Size {
				return // not where the marker must be: trust nothing
			}
			self, selfOK = selfImage{buildID: id, bias: pc - vaddr}, true
			return
		}
	})
	return self, selfOK
}

// runtimeFrame names vaddr of the running executable from its function
// table, with its file and line (as a parsed pclntab gave them): the
// outermost function where code was inlined, as the ELF symbol table
// would, and a generic function's type arguments as [...], as Go's own
// profiles print them (the ELF table spells out the shape:
// IndexRabinKarp[go.shape.string]). The table's first function reads as
// unnamed (its name is at offset 0, which the runtime takes for none).
func (im selfImage) runtimeFrame(vaddr uint64) (Frame, bool) {
	pc := uintptr(vaddr + im.bias)
	fn, name := outerFunc(pc)
	if name == "" {
		return Frame{}, false
	}
	file, line := fn.FileLine(pc)
	if file == "?" || line <= 0 { // no line table entry (the padding past a function's code)
		file, line = "", 0
	}
	return Frame{Function: name, File: file, Line: line}, true
}

// outerFunc is the function table's entry at pc (the innermost function
// where code was inlined, whose FileLine is pc's own) and the name of the
// function it was inlined into; "" when none.
func outerFunc(pc uintptr) (*runtime.Func, string) {
	fn := runtime.FuncForPC(pc)
	if fn == nil {
		return nil, ""
	}
	if outer := runtime.FuncForPC(fn.Entry()); outer != nil {
		return fn, outer.Name()
	}
	return fn, fn.Name()
}

// knowsPC reports whether the runtime's table names vaddr (without its
// line, which only a lookup needs: this runs for every ELF symbol of the
// binary when it is read).
func (im selfImage) knowsPC(vaddr uint64) bool {
	_, name := outerFunc(uintptr(vaddr + im.bias))
	return name != ""
}
