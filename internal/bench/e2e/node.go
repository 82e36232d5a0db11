package e2e

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/internal/bench/proc"
	"github.com/triage-agent/triage/train"
)

// The node of a format-v2 scenario, played for real: the workers run on
// node.cpus of the machine's CPUs (a CPU set), a task's CPU part is CPU
// time of its worker and its I/O part real writes of 64 KiB, each fsync'd,
// to a file of its worker's on the disk of IODir, and the interference
// episodes are real neighbours (proc.Load: spinners at the workers' nice,
// writers on the same disk) started and stopped on the scenario's clock.
// Contention then slows tasks as it does on a real node, which is what the
// calibration measured and the simulator follows.

// ErrTooManyCPUs reports a scenario whose node has more CPUs than this
// machine: real execution can only give it the CPUs there are.
var ErrTooManyCPUs = errors.New("e2e: the scenario's node has more CPUs than this machine")

// ioWriteBytes is the size of one fsync'd write of a task's I/O part, and
// spanWrites how many of them a worker's file holds: its writes go round
// the 8 MiB span, overwriting after the first pass.
const (
	ioWriteBytes = 64 << 10
	spanWrites   = 128
)

// node is the played node of one run.
type node struct {
	cpus    []int   // the CPU set of workers and neighbours; nil: all
	dir     string  // where the workers' files are
	writeMs float64 // one uncontended write+fsync, measured at the start
	settled time.Duration
}

// cpuCount is how many CPUs the workers run on: the CPU set's, or the
// machine's where they run on all of them.
func (n *node) cpuCount() int {
	if len(n.cpus) > 0 {
		return len(n.cpus)
	}
	return runtime.NumCPU()
}

// CheckNode refuses a scenario whose node this machine cannot give: more
// CPUs than it has.
func CheckNode(sc *train.Scenario) error {
	if !sc.HasNode() {
		return nil
	}
	if cpus, have := sc.NodeCPUs(), runtime.NumCPU(); cpus > have {
		return fmt.Errorf("%w: node.cpus %d, this machine has %d (scale the scenario down to run it for real)", ErrTooManyCPUs, cpus, have)
	}
	return nil
}

// newNode checks sc's node against this machine and prepares it: the CPU
// set, and when any class does I/O, the directory and the time of one
// uncontended write (the unit a task's I/O part is counted in): writeMs
// when it is above 0, else measured on the settled disk.
func newNode(sc *train.Scenario, dir string, writeMs float64) (*node, error) {
	n := &node{}
	if !sc.HasNode() {
		return n, nil
	}
	if err := CheckNode(sc); err != nil {
		return nil, err
	}
	if cpus := sc.NodeCPUs(); cpus < runtime.NumCPU() {
		for c := 0; c < cpus; c++ {
			n.cpus = append(n.cpus, c)
		}
	}
	if !sc.DoesIO() {
		return n, nil
	}
	if dir == "" {
		dir = os.TempDir()
	}
	d, err := os.MkdirTemp(dir, "triage-e2e-io-")
	if err != nil {
		return nil, fmt.Errorf("e2e: the tasks' I/O directory: %w", err)
	}
	n.dir = d
	// The disk is settled before a run measures its I/O unit: the run
	// before it (its deletions, the neighbours' and tasks' last writes, the
	// journal) leaves writeback that would otherwise fall on this run's
	// first seconds and on its unit, which every task's I/O part is
	// counted in.
	if n.settled, _, err = proc.SettleDisk(proc.SettleQuietBytes, proc.SettleTimeout); err != nil {
		n.close()
		return nil, fmt.Errorf("e2e: settling the disk: %w", err)
	}
	if n.writeMs = writeMs; writeMs > 0 {
		return n, nil
	}
	if n.writeMs, err = measureWrite(d); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// measureWrite is the mean time of a write+fsync over unitWindow of
// back-to-back writes, after one pass over the file's span so that they
// overwrite as a task's writes do after its worker's first spanWrites
// (appending writes also commit their block allocation: 0.31-0.36 ms here
// against 0.19-0.20 overwriting). It is measured the way `triage
// calibrate`'s probe measures the uncontended write (a stretch of seconds of
// back-to-back overwrites), because the simulator stretches a task's I/O
// part by the calibration's ratio to that probe's mean: a unit measured any
// other way changes how many writes stand for a millisecond and so how
// much contention stretches them. The window matters: fsync times are
// heavy-tailed (the journal's periodic commits land in a window of
// seconds, not in 40 writes), and the mean of 40, measured before each run,
// came out 0.43 to 0.96 ms in four runs of one bench, where 256
// back-to-back overwrites gave 0.28-0.33 ms and the calibration probe, at
// the same hour, 0.41 ms (2026-12-03). The mean, not the median: a task's
// I/O part is a run of writes, whose time is their count times the mean.
func measureWrite(dir string) (float64, error) {
	w, err := newTaskFile(dir)
	if err != nil {
		return 0, err
	}
	defer w.close()
	for range spanWrites {
		if err := w.write(); err != nil {
			return 0, err
		}
	}
	n, start := 0, time.Now()
	for time.Since(start) < unitWindow || n < minUnitWrites {
		if err := w.write(); err != nil {
			return 0, err
		}
		n++
	}
	return float64(time.Since(start)) / float64(time.Millisecond) / float64(n), nil
}

// unitWindow is how long the I/O unit is measured, at least minUnitWrites
// writes: the calibration probe's windows are seconds long too.
const (
	unitWindow    = 3 * time.Second
	minUnitWrites = 64
)

// pin puts the calling (locked) thread on the node's CPU set.
func (n *node) pin() error {
	if len(n.cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, c := range n.cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(0, &set)
}

// writes is the number of fsync'd writes that stand for ioMs of
// uncontended I/O (at least one for any I/O at all).
func (n *node) writes(ioMs float64) int {
	if ioMs <= 0 || n.writeMs <= 0 {
		return 0
	}
	return max(1, int(math.Round(ioMs/n.writeMs)))
}

// play starts and stops sc's interference on the run's clock (wall
// seconds per scenario second: scale) until stop closes; the neighbours
// run at nice, on the node's CPUs, writing on its disk.
func (n *node) play(sc *train.Scenario, scale float64, nice int, start time.Time, stop <-chan struct{}) error {
	type edge struct {
		at    time.Time
		start bool
		ep    int
	}
	var edges []edge
	for i, e := range sc.Interference {
		at := start.Add(time.Duration(e.AtS * scale * float64(time.Second)))
		edges = append(edges, edge{at, true, i}, edge{at.Add(time.Duration(e.ForS * scale * float64(time.Second))), false, i})
	}
	slices.SortStableFunc(edges, func(a, b edge) int { return a.at.Compare(b.at) })
	running := make([]*proc.Load, len(sc.Interference))
	defer func() {
		for _, l := range running {
			_ = l.Close()
		}
	}()
	for _, e := range edges {
		select {
		case <-stop:
			return nil
		case <-time.After(time.Until(e.at)):
		}
		if !e.start {
			err := running[e.ep].Close()
			running[e.ep] = nil
			if err != nil {
				return err
			}
			continue
		}
		ep := sc.Interference[e.ep]
		l, err := proc.StartLoad(proc.LoadConfig{Spinners: float64(ep.Threads), Writers: ep.Writers,
			Dir: n.dir, WriteBytes: ioWriteBytes, Nice: nice, CPUs: n.cpus, Name: "neighbour"})
		if err != nil {
			return fmt.Errorf("e2e: interference %d (%s): %w", e.ep, ep.Kind, err)
		}
		running[e.ep] = l
	}
	<-stop
	return nil
}

func (n *node) close() {
	if n.dir != "" {
		_ = os.RemoveAll(n.dir)
	}
}

// taskFile is one worker's file for its tasks' I/O parts.
type taskFile struct {
	f   *os.File
	buf []byte
	off int64
}

func newTaskFile(dir string) (*taskFile, error) {
	f, err := os.CreateTemp(dir, "worker-*.dat")
	if err != nil {
		return nil, fmt.Errorf("e2e: a worker's file: %w", err)
	}
	buf := make([]byte, ioWriteBytes)
	for i := range buf {
		buf[i] = byte(i*11 + 3)
	}
	return &taskFile{f: f, buf: buf}, nil
}

// write writes 64 KiB and fsyncs it, rewriting a bounded span.
func (w *taskFile) write() error {
	if _, err := w.f.WriteAt(w.buf, w.off); err != nil {
		return fmt.Errorf("e2e: task write: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("e2e: task fsync: %w", err)
	}
	w.off = (w.off + ioWriteBytes) % (spanWrites * ioWriteBytes)
	return nil
}

func (w *taskFile) close() {
	name := w.f.Name()
	_ = w.f.Close()
	_ = os.Remove(name)
}
