package train

import (
	"slices"

	"github.com/triage-agent/triage/policy"
)

// SimulatedLevel is what the simulator makes of one calibration load: the
// distribution (p10, median, p90 over its 500 ms windows) of each
// synthesised signal, and the slowdown it applies to a task.
type SimulatedLevel struct {
	RunqP50Us, RunqP99Us, BlkioP99Us Spread
	Slowdown                         float64
}

// Spread is a distribution summarised by its p10, median and p90.
type Spread struct{ P10, P50, P90 float64 }

// simCPUs is the node the comparison simulates: four CPUs, so that every
// calibrated load from 0.25 threads per CPU is a whole number of threads.
// The signals depend on threads per CPU only.
const simCPUs = 4

// SimulateCPULevel runs the simulator's signal synthesis (the code a
// training episode runs, not a copy of it) on a node with threadsPerCPU
// runnable threads per CPU for samples windows.
func SimulateCPULevel(cal *Calibration, threadsPerCPU float64, samples int, seed int64) SimulatedLevel {
	threads := int(threadsPerCPU*simCPUs + 0.5)
	return simulateLevel(cal, threads, 0, samples, seed)
}

// SimulateIOLevel is SimulateCPULevel for writers fsync'ing writers on the
// disk besides the task whose slowdown is measured.
func SimulateIOLevel(cal *Calibration, writers int, samples int, seed int64) SimulatedLevel {
	return simulateLevel(cal, 0, writers, samples, seed)
}

func simulateLevel(cal *Calibration, threads, writers, samples int, seed int64) SimulatedLevel {
	sc := &Scenario{Name: "calibration", Workers: 1, Node: &Node{CPUs: simCPUs},
		Classes: []Class{{Name: "probe", Share: 1, SLAMs: 100}}}
	node := newNodeModel(sc, cal)
	// The measured task is one of the runnable threads (CPU levels) or the
	// one writer besides the neighbours (I/O levels), as in calibrate.
	if writers > 0 || threads == 0 {
		node.threads, node.writers, node.nIO = 0, writers, 1
	} else {
		node.threads = threads
	}
	g := newSignals(sc, cal, node, seed, 0, 0)
	var p50, p99, blk []float64
	o := &Outcome{Task: Task{Class: 0, SLAMs: 100, ExpectedMs: 1}}
	// Two windows to fill the agent's 1 s window, then one sample per tick.
	for i := range samples + 2 {
		g.advance(float64(i+1) * windowTick)
		if i < 2 {
			continue
		}
		in := g.inputs(o, 0, g.lastT)
		p50 = append(p50, in.RunqP50Us)
		p99 = append(p99, in.RunqP99Us)
		blk = append(blk, in.BlkioP99Us)
	}
	out := SimulatedLevel{RunqP50Us: spread(p50), RunqP99Us: spread(p99), BlkioP99Us: spread(blk)}
	if writers > 0 || threads == 0 {
		out.Slowdown = node.ioSlowdown(float64(writers))
	} else {
		out.Slowdown = node.cpuSlowdown(float64(threads))
	}
	return out
}

func spread(xs []float64) Spread {
	slices.Sort(xs)
	return Spread{policy.NearestRank(xs, 0.1), policy.NearestRank(xs, 0.5), policy.NearestRank(xs, 0.9)}
}
