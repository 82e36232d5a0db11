package train

import (
	"math"
	"slices"
)

// The node around the executor in the simulator (scenario format v2).
//
// A task's cost is its service time on an uncontended node, split into a
// CPU part, then a synchronous I/O part (Class.IOShare of it). Every task in
// its CPU part is one runnable thread on the node's CPUs, beside the
// interference's neighbour threads; every task in its I/O part is one
// fsync'ing writer on the disk, beside the neighbour writers. How much each
// part stretches at a given contention is what `triage calibrate` measured
// on a real kernel (Calibration): a runnable thread with a CPU to itself
// runs at full speed; beyond one per CPU the measured slowdown applies.
//
// All the tasks in one part share one speed at any moment (a fair
// scheduler, equal nice values), so each part keeps a virtual clock that
// advances at that speed, and a task's part ends when its clock has
// advanced by the part's work: the order of completions within a part never
// changes, so one heap per part orders them.

// vclock is a virtual clock v(t) = t − lag: it advances at speed (≤ 1) of
// wall time. Kept as a lag, so that on a node that never slows down the
// virtual times equal the wall times exactly, and a v1 scenario runs as it
// did before the node existed.
type vclock struct {
	lag   float64
	speed float64
}

func (c *vclock) now(t float64) float64 { return t - c.lag }

func (c *vclock) advance(dt float64) {
	if c.speed != 1 {
		c.lag += dt * (1 - c.speed)
	}
}

// wallAt is when the clock reaches target if the speed holds from t on.
func (c *vclock) wallAt(target, t float64) float64 {
	if c.speed == 1 {
		return target + c.lag
	}
	return max(t, t+(target-c.now(t))/c.speed)
}

// nodeModel is the contention on the simulated node and the speeds it
// gives the executor's tasks.
type nodeModel struct {
	sc   *Scenario
	cal  *Calibration
	cpus float64
	// edges are the interference's start and end times (ms), sorted: the
	// speeds change there.
	edges []float64

	// wake is the clock of the tasks in the first, waking part of their
	// CPU work (wakeCreditMs), cpu of the rest of it.
	wake, cpu, io vclock
	// wakeCreditMs is the CPU work a task does as a waker (0: none).
	wakeCreditMs float64
	// Counts since the last change: executor tasks in each part, and the
	// neighbours.
	nWake, nCPU, nIO int
	threads, writers int
	// writerCPU is the CPU the disk's writers (tasks in their I/O part
	// and neighbours) keep busy, in threads (Calibration.WriterThreads):
	// fsync'd writes cost CPU, theirs and the kernel's, and on a small
	// node that CPU is the workers'.
	writerCPU       float64
	cpuSlow, ioSlow float64 // the slowdowns the speeds come from
}

func newNodeModel(sc *Scenario, cal *Calibration) *nodeModel {
	n := &nodeModel{sc: sc, cal: cal, cpus: float64(sc.NodeCPUs())}
	for _, e := range sc.Interference {
		n.edges = append(n.edges, e.AtS*1000, (e.AtS+e.ForS)*1000)
	}
	slices.Sort(n.edges)
	n.wake.speed, n.cpu.speed, n.io.speed, n.cpuSlow, n.ioSlow = 1, 1, 1, 1, 1
	if sc.HasNode() && cal != nil {
		n.wakeCreditMs = cal.WakeCredit()
	}
	return n
}

// nextEdge is the first interference edge after t (ms), or +Inf.
func (n *nodeModel) nextEdge(t float64) float64 {
	i, _ := slices.BinarySearch(n.edges, math.Nextafter(t, math.Inf(1)))
	if i < len(n.edges) {
		return n.edges[i]
	}
	return math.Inf(1)
}

func (n *nodeModel) advance(dt float64) {
	n.wake.advance(dt)
	n.cpu.advance(dt)
	n.io.advance(dt)
}

// set records the counts from time t (ms) on and recomputes the speeds:
// nWake tasks in the waking part of their CPU work, nCPU in the rest of
// it, nIO in their I/O part.
//
// A task that has just started is a thread that has just woken (the
// worker slept until it came), and the scheduler runs a waking thread
// ahead of threads that have used their share: the neighbours' spinners.
// So for its first wakeCreditMs of CPU work a task shares the CPUs with
// the executor's other tasks only, as on a node without the spinners, and
// after that with everything runnable. The executor's tasks wake alike, so
// among themselves they share fairly (a quiet node is as before); the
// spinners pay. Measured: docs/calibration.md, "Short tasks under CPU
// contention".
func (n *nodeModel) set(nWake, nCPU, nIO int, t float64) {
	n.nWake, n.nCPU, n.nIO = nWake, nCPU, nIO
	n.threads, n.writers = n.sc.NeighbourLoad(t / 1000)
	n.writerCPU = 0
	if n.cal != nil {
		n.writerCPU = n.cal.WriterThreads(float64(nIO + n.writers))
	}
	tasks := float64(nWake + nCPU)
	n.cpuSlow = n.cpuSlowdown(tasks + float64(n.threads))
	n.ioSlow = n.ioSlowdown(float64(nIO-1+n.writers)) * n.ioCPUSlowdown(tasks+float64(n.threads))
	n.wake.speed, n.cpu.speed, n.io.speed = 1/n.cpuSlowdown(tasks), 1/n.cpuSlow, 1/n.ioSlow
}

// cpuLoad is the runnable threads per CPU, the writers' CPU counted as
// the threads it would keep busy.
func (n *nodeModel) cpuLoad() float64 {
	return (float64(n.nWake+n.nCPU+n.threads) + n.writerCPU) / n.cpus
}

// queueingLoad is the threads per CPU that queue for them: the
// executor's tasks in their CPU parts and the neighbours' spinners, not the
// writers' CPU. What the run-queue features are read at: an fsync'd writer
// wakes onto a CPU at once, thousands of times a second, so on a real node
// writers dilute the run-queue p99 rather than raise it (measured: 4.2 ms
// beside 1.6 spinners on 2 CPUs, 0.4 ms with 4 writers added;
// docs/calibration.md, "The run queue under writers"). The dilution is
// applied to the percentiles read at this load (signals.runqWindow,
// Calibration.RunqBesideWriters).
func (n *nodeModel) queueingLoad() float64 {
	return float64(n.nWake+n.nCPU+n.threads) / n.cpus
}

// diskWriters is the fsync'ing writers on the disk, tasks and neighbours.
func (n *nodeModel) diskWriters() int { return n.nIO + n.writers }

// cpuSlowdown is how much a task's CPU part stretches with runnable
// threads on the node: 1 while each has a CPU to itself, and never less
// than the threads per CPU beyond that. The floor is work conservation:
// n always-runnable threads of one nice value on c CPUs get c CPU-seconds
// a second between them, n/c each on average, whatever one thread of them
// measured. The calibration's probe is one thread, and where the threads
// do not divide evenly among the CPUs (3 on 2) the balancer may leave it a
// CPU of its own: it measured 1.01 at 1.5 threads per CPU on this machine,
// and without the floor the simulated node served 3 CPUs of work on 2
// (docs/calibration.md, "Simulator against real execution").
//
// The writers' CPU (writerCPU) is taken off the CPUs before the threads
// share them: much of it is the kernel's (journal commits, block
// completions, at a better nice than the workers' or in interrupts), which
// preempts the workers instead of taking turns with them. On this machine
// four neighbour writers stretched the CPU-only class of noisy-neighbour
// 3.0× where sharing the CPUs fairly with them gave 2.4× and this gives 3.4×.
func (n *nodeModel) cpuSlowdown(runnable float64) float64 {
	cpus := max(n.cpus-n.writerCPU, n.cpus*minCPUsLeft)
	load := runnable / cpus
	if load <= 1 || n.cal == nil {
		return 1
	}
	return max(load, n.cal.CPUAt(load).Slowdown)
}

// minCPUsLeft is the share of the node's CPUs the writers never take: a
// kernel flushing for many writers still schedules the threads.
const minCPUsLeft = 0.1

// ioCPUSlowdown is how much a task's I/O part stretches with runnable
// threads on the node's CPUs (the executor's tasks in their CPU parts and
// the neighbours' spinners): each fsync'd write wakes its writer twice, and
// on a busy CPU a waking writer waits its turn (Calibration.IOCPUSlowdown;
// 1 with a calibration that did not measure it).
func (n *nodeModel) ioCPUSlowdown(runnable float64) float64 {
	if n.cal == nil {
		return 1
	}
	return n.cal.IOCPUSlowdown(runnable / n.cpus)
}

// ioSlowdown is how much a task's I/O part stretches with others writers
// on the disk besides it.
func (n *nodeModel) ioSlowdown(others float64) float64 {
	if others <= 0 || n.cal == nil {
		return 1
	}
	return max(1, n.cal.IOAt(others).Slowdown)
}
