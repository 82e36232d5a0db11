package train

import "sort"

// IOCPULevel is an fsync'd write measured beside steady CPU spinners:
// SpinnersPerCPU of them per CPU, at the workers' nice; WriteMs the mean
// write and fsync, Slowdown it over the row without spinners. A write is
// two wake-ups (its return and the fsync's completion), and a writer that
// wakes on an oversubscribed CPU waits for its turn there: the median write
// does not move, a tail of writes that lost their CPU for a slice does
// (docs/calibration.md, "Writes that wait for a CPU").
type IOCPULevel struct {
	SpinnersPerCPU float64 `json:"spinners_per_cpu"`
	WriteMs        float64 `json:"write_ms"`
	Slowdown       float64 `json:"slowdown"`
}

// IOCPUSlowdown is how much an fsync'd write stretches beside perCPU
// runnable threads per CPU (the IOCPU rows, linear between them; the last
// row's past it, since the rows say nothing of more; 1 in a calibration
// written before they were measured).
func (c *Calibration) IOCPUSlowdown(perCPU float64) float64 {
	lv := c.IOCPU
	if len(lv) == 0 || !(perCPU > lv[0].SpinnersPerCPU) {
		return 1
	}
	last := lv[len(lv)-1]
	if perCPU >= last.SpinnersPerCPU {
		return last.Slowdown
	}
	i := sort.Search(len(lv), func(i int) bool { return lv[i].SpinnersPerCPU >= perCPU })
	a, b := lv[i-1], lv[i]
	return lerp(a.Slowdown, b.Slowdown, (perCPU-a.SpinnersPerCPU)/(b.SpinnersPerCPU-a.SpinnersPerCPU))
}

// validateIOCPU checks the IOCPU rows: none, or a first row without
// spinners at slowdown 1, spinners increasing, every write and slowdown a
// positive number.
func (c *Calibration) validateIOCPU() error {
	for i, l := range c.IOCPU {
		for _, v := range []float64{l.WriteMs, l.Slowdown} {
			if !finite(v) || v <= 0 {
				return badCal("io_cpu[%d]: write_ms and slowdown must be positive numbers, got %v", i, v)
			}
		}
		if !finite(l.SpinnersPerCPU) || l.SpinnersPerCPU < 0 || (i > 0 && l.SpinnersPerCPU <= c.IOCPU[i-1].SpinnersPerCPU) {
			return badCal("io_cpu[%d]: spinners_per_cpu must be non-negative and increase, got %v", i, l.SpinnersPerCPU)
		}
	}
	if len(c.IOCPU) > 0 && (c.IOCPU[0].SpinnersPerCPU != 0 || c.IOCPU[0].Slowdown != 1) {
		return badCal("io_cpu[0] must be the write without spinners (spinners_per_cpu 0, slowdown 1)")
	}
	return nil
}
