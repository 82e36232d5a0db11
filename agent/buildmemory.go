package agent

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// largeBuildBytes is what a symboliser build must allocate for its garbage
// to be handed back before the next flame-graph window. Reading libc's
// debug file for inline frames allocates about 100 MiB (its DWARF read
// whole and decompressed, then walked), a large C++ library's unwind table
// a few MiB; a small binary's symbols a few hundred KiB, which the
// runtime's scavenger returns on its own.
const largeBuildBytes = 8 << 20

// buildMemoryDelay gathers the builds of one new process (its binary and
// each library it maps, then their unwind tables) into one return.
const buildMemoryDelay = time.Second

// buildMemory returns the free heap to the OS shortly after a large
// symboliser build. Without it the build's garbage stayed resident until
// the next window's return (a minute by default): 38 to 44 MiB of free
// heap for 8 s after the start of a bench run (docs/footprint-history.md,
// "Transient builds and the kernel's names").
type buildMemory struct {
	pending atomic.Bool
	free    func() // debug.FreeOSMemory; tests count calls
	delay   time.Duration
}

func newBuildMemory() *buildMemory {
	return &buildMemory{free: debug.FreeOSMemory, delay: buildMemoryDelay}
}

// afterBuild is the symboliser's AfterBuild hook: a large build schedules
// one return, and builds before it runs join it.
func (b *buildMemory) afterBuild(allocated uint64) {
	if allocated < largeBuildBytes || !b.pending.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(b.delay, func() {
		b.pending.Store(false)
		b.free()
	})
}
