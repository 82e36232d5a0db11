package train

import (
	"math"
	"testing"
)

// Three always-runnable threads on two CPUs get two CPU-seconds a second
// between them, whatever the calibration's one probe measured there (it
// measured 1.01 at 1.5 threads per CPU on the development machine: the
// balancer had left it a CPU of its own).
func TestCPUSlowdownNeverBeatsTheFairShare(t *testing.T) {
	cal := DefaultCalibration()
	sc := &Scenario{Workers: 4, Node: &Node{CPUs: 2}}
	n := newNodeModel(sc, cal)
	for _, tc := range []struct{ runnable, atLeast float64 }{{1, 1}, {2, 1}, {3, 1.5}, {4, 2}, {6, 3}, {16, 8}} {
		got := n.cpuSlowdown(tc.runnable)
		if got < tc.atLeast-1e-9 {
			t.Errorf("%v runnable threads on 2 CPUs: slowdown %.3f, below the fair share %.2f", tc.runnable, got, tc.atLeast)
		}
		if tc.runnable <= 2 && got != 1 {
			t.Errorf("%v runnable threads on 2 CPUs: slowdown %.3f, want 1", tc.runnable, got)
		}
	}
	if cal.CPUAt(1.5).Slowdown >= 1.5 {
		t.Logf("the calibration's own slowdown at 1.5 threads per CPU is %.2f, at or above the fair share: the floor is not exercised", cal.CPUAt(1.5).Slowdown)
	}
}

// Writers cost CPU: the calibration measures it, and the simulated node
// takes it off the CPUs the threads share. A calibration without the
// measurement (written before it existed) leaves the CPUs whole.
func TestWritersTakeCPUFromTheThreads(t *testing.T) {
	cal := &Calibration{Machine: MachineInfo{CPUs: 2}, Idle: IdleLevel{CPUUtil: 0.01},
		CPU: []CPULevel{{ThreadsPerCPU: 1, Slowdown: 1}, {ThreadsPerCPU: 2, Slowdown: 2}, {ThreadsPerCPU: 4, Slowdown: 4}},
		IO:  []IOLevel{{Writers: 0, CPUUtil: 0.21, Slowdown: 1}, {Writers: 4, CPUUtil: 0.41, Slowdown: 3}}}
	for _, tc := range []struct{ writers, want float64 }{
		{0, 0}, {1, 0.4}, {0.5, 0.2}, {5, 0.8}, {10, 1.6}, {3, 0.6}, // 3 writers: the level of 2 beside the probe, halfway
	} {
		if got := cal.WriterThreads(tc.writers); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%v writers: %.3f threads, want %.3f", tc.writers, got, tc.want)
		}
	}
	sc := &Scenario{Workers: 4, Node: &Node{CPUs: 2}, Interference: []Episode{{Kind: InterferenceIO, AtS: 0, ForS: 10, Writers: 4}}, DurationS: 10}
	n := newNodeModel(sc, cal)
	n.set(0, 4, 1, 1000) // 4 tasks in their CPU part (none waking), 1 in its I/O part beside 4 neighbour writers
	if math.Abs(n.writerCPU-0.8) > 1e-9 {
		t.Fatalf("writer CPU %.3f, want 0.8 (5 writers)", n.writerCPU)
	}
	if want := 4 / (2 - 0.8); math.Abs(n.cpuSlow-want) > 1e-9 {
		t.Errorf("CPU slowdown %.3f, want %.3f: 4 threads on the 1.2 CPUs the writers leave", n.cpuSlow, want)
	}
	if load := n.cpuLoad(); math.Abs(load-2.4) > 1e-9 {
		t.Errorf("CPU load for the signals %.3f, want 2.4", load)
	}

	old := *cal
	old.IO = []IOLevel{{Writers: 0, Slowdown: 1}, {Writers: 4, Slowdown: 3}}
	n = newNodeModel(sc, &old)
	n.set(0, 4, 1, 1000)
	if n.writerCPU != 0 || n.cpuSlow != 2 {
		t.Errorf("without a measured cpu_util: writer CPU %.3f, slowdown %.3f; want 0 and 2", n.writerCPU, n.cpuSlow)
	}
}

// The default calibration measured the writers' CPU.
func TestDefaultCalibrationMeasuredWriterCPU(t *testing.T) {
	cal := DefaultCalibration()
	for i, l := range cal.IO {
		if !(l.CPUUtil > cal.Idle.CPUUtil) || l.CPUUtil > 1 {
			t.Errorf("io[%d] (%d writers): cpu_util %v beside idle %v", i, l.Writers, l.CPUUtil, cal.Idle.CPUUtil)
		}
	}
	if w := cal.WriterThreads(5); !(w > 0) {
		t.Errorf("5 writers keep %v threads busy", w)
	}
}
