package agent

import (
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/policy"
)

// The agent's own memory bounds (docs/footprint.md has the measurements
// behind each).

// Bounds of the ring buffer that carries user-stack copies from the
// sampler to the unwinder.
const (
	minCopyRingBytes = 256 << 10
	maxCopyRingBytes = 4 << 20
	// copyRingSeconds is the time of samples the ring holds when every
	// CPU is sampled at the default rate with a full stack copy: the
	// reader drains it continuously, so it only has to cover a reader
	// that falls behind for a moment (a full ring sends the next samples
	// by frame pointer, it loses none).
	copyRingSeconds = 0.5
)

// copyRingBytes sizes the stack-copy ring for cpus CPUs: half a second of
// samples, a power of two between 256 KiB and 4 MiB. The kernel maps the
// ring's data pages twice into the agent (so a record can wrap), so its
// resident size is twice this.
func copyRingBytes(cpus int) uint32 {
	want := float64(max(cpus, 1)) * bpf.DefaultFrequencyHz * bpf.DefaultStackCopyBytes * copyRingSeconds
	n := uint32(minCopyRingBytes)
	if want > minCopyRingBytes {
		n = 1 << bits.Len32(uint32(want)-1)
	}
	return min(n, maxCopyRingBytes)
}

// DefaultGoMemoryLimit is `triage agent`'s soft limit on the Go runtime's
// memory (heap, stacks, runtime structures; not ONNX Runtime's C heap, not
// the mapped binary): a ceiling over GOGC's pace, not a target under it.
// It is soft: a live heap near it makes the collector run without pause
// (at most half the CPU, Go's own bound), never fail. It was 48 MiB, under
// the live heap of a loaded agent (41–46 MiB under the soak, plus stacks
// and runtime structures), and there the collector's pace made the agent
// the bottleneck: in two 2-minute soaks side by side, 4,512 decisions a
// second with decide p99 620 ms at 48 MiB against 4,998/s and 11 ms with
// no limit, for 96 against 120 MiB of RSS (docs/footprint.md). 128 MiB
// binds only for a live heap over about 60 MiB, where GOGC's doubling
// would pass it.
const DefaultGoMemoryLimit = 128 << 20

// applyGoMemoryLimit sets the process's soft memory limit to limit bytes
// unless it is 0 or the environment sets GOMEMLIMIT (the operator's word
// wins); it returns the limit in force.
func applyGoMemoryLimit(limit int64) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || limit <= 0 {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// DefaultMaxProcs is `triage agent`'s GOMAXPROCS: one P. The agent's
// work is many short wake-ups (table pushes, reports, outcomes, snapshots)
// and little computing, and each wake-up with a second P idle hands work
// between threads (futex wake-ups, spinning Ms) and restarts the runtime's
// monitor at its 20 µs tick. On a 2-CPU node under the e2e load with local
// decisions, one P cut the agent's CPU while serving from 11.7% to 7.7–8.1%
// of a core (docs/footprint-history.md, "One P"); the agent's CPU is taken
// from the node's own work, which on a saturated node costs SLA
// attainment.
// What one P gives up: a long model call (a table refresh over every cell)
// or the symboliser holds the P, so a remote decide may wait behind it.
const DefaultMaxProcs = 1

// maxProcsFromEnvironment reports whether GOMAXPROCS is set in the
// environment: the operator's word, which the agent neither replaces nor
// raises for a window.
func maxProcsFromEnvironment() bool {
	_, set := os.LookupEnv("GOMAXPROCS")
	return set
}

// applyMaxProcs sets GOMAXPROCS to n unless it is 0 or the environment
// sets GOMAXPROCS (the operator's word wins); it returns the value in
// force.
func applyMaxProcs(n int) int {
	if maxProcsFromEnvironment() || n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	runtime.GOMAXPROCS(n)
	return n
}

// DefaultMallocArenas is the most glibc malloc arenas `triage agent` runs
// with (MALLOC_ARENA_MAX, which cmd/triage sets by re-executing itself; the
// environment's own value wins). ONNX Runtime allocates with malloc (the
// policy turns off ORT's own arena), and glibc gives each thread that
// mallocs an arena of its own, up to 8 per CPU; Go makes the first malloc
// on every thread it starts, and runs a cgo call on whichever thread the
// goroutine is on. Each arena keeps the pages its chunks were freed from,
// so over a long run the C heap grew by an arena's working set for each
// new thread. Two arenas hold what the agent needs: it runs the model from
// the batcher's one runner at a time, the table refresh and a model load.
const DefaultMallocArenas = 2

// DefaultMallocMmapThreshold is the mmap threshold `triage agent` fixes for
// the C heap: every allocation of 256 KiB or more is an mmap of its own,
// unmapped when freed. glibc's own threshold starts at 128 KiB and rises
// to the largest block freed (up to 32 MiB), after which such blocks come
// from the arenas, which keep them as free chunks. When the table's
// refresh ran the model over up to 1,024 cells a call, whose buffers are
// megabytes, the C heap under the e2e load with local decisions kept
// 33–38 MB of free chunks beside 8.5 MB in use, and with the threshold
// fixed 4 MB (docs/footprint-history.md, "The C heap's free chunks"). The
// model's calls now stay under it (ModelMaxBatch), so it bounds what else
// is large: a model load, a caller's own big batch.
const DefaultMallocMmapThreshold = 256 << 10

// ModelMaxBatch is the most states the agent passes to one ONNX Runtime
// call (policy.Config.MaxBatch; a batch of the batcher or a table's cells
// are split). A call's largest buffer, a hidden layer of every member (192
// floats a row for the default model: 96 KiB at 128 rows), then stays under
// DefaultMallocMmapThreshold and is reused from the arena; a call over
// 1,024 cells mapped, faulted in and unmapped megabytes each time, which
// made a decision table's refresh seven times dearer per cell
// (BenchmarkTableEvaluation) and the agent's CPU under the e2e load with
// local decisions 5 points of a core higher (docs/footprint.md).
const ModelMaxBatch = 128

// applyMallocMmapThreshold fixes the C heap's mmap threshold at bytes
// unless the environment sets it (MALLOC_MMAP_THRESHOLD_, or the
// glibc.malloc.mmap_threshold tunable: the operator's word wins); set
// says whether it did.
func applyMallocMmapThreshold(bytes int64) (set bool, err error) {
	if MallocSetInEnvironment(os.Environ(), "MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold") {
		return false, nil
	}
	if err := policy.SetCHeapMmapThreshold(int(bytes)); err != nil {
		return false, err
	}
	return true, nil
}

// MallocSetInEnvironment says whether environ sets one of glibc's malloc
// parameters, by its variable (MALLOC_ARENA_MAX) or by its tunable in
// GLIBC_TUNABLES (glibc.malloc.arena_max): the operator's setting, which
// the agent's own must not override.
func MallocSetInEnvironment(environ []string, variable, tunable string) bool {
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if name == variable || name == "GLIBC_TUNABLES" && strings.Contains(value, tunable) {
			return true
		}
	}
	return false
}

// returnFreeMemory runs once the agent is ready (what starting left: the
// profiler's programs, loaded after the signals collector returned its
// own garbage, and the model's read) and after each flame-graph window is
// written. A
// window's symbolisation is the agent's one burst of allocation (a new
// binary's symbols and unwind tables, the profile), which the runtime's
// scavenger returns only slowly, and it walks code and constants nothing
// else uses (the symboliser, the pprof and SVG writers, pclntab for the
// profile's Go frames): both stayed resident from one window to the next.
// So the free heap is returned and the read-only file pages are released
// again, as at start (releaseFilePages); what the agent goes on using
// faults back from the page cache. Once a window (a minute by default) it
// costs a forced collection and one read of /proc/self/smaps, a few
// milliseconds (docs/footprint-history.md, "Returning a window's
// memory"). It returns the file pages' resident bytes released.
func returnFreeMemory() (int64, error) {
	debug.FreeOSMemory()
	return releaseFilePages()
}
