package train

import "math"

// The run queue of bursty threads. The calibration's CPU levels are steady
// spinners: N threads that never sleep, whose run-queue p99 stays near
// 60 µs up to one thread per CPU. An executor's workers are not steady:
// each runs a task, then takes the next or sleeps, so on the same mean load
// they outnumber the CPUs now and then, and every wakeup in those moments
// waits for a CPU. A one-second histogram's p99 is the oversubscribed
// moments' latency as soon as they hold more than about 1% of its wakeups.
// Measured on the 2-CPU VM (docs/calibration.md, "Bursty threads and the
// run queue"), four bursty processes at a mean of 0.5 and 0.8 threads per
// CPU, oversubscribed 5% and 18% of the time, read p99s of 2.1 and 3.4 ms
// where the steady levels at their mean read 50–60 µs and the steady
// level at 1.5 threads per CPU 4.6 ms.
//
// RunqP99Oversubscribed models it: with share of the window spent with
// more runnable threads than CPUs, at a mean load of overLoad threads per
// CPU during that time, the p99 is the steady level's at overLoad scaled
// by share^OversubscribedExponent, and nothing (0) while share is under
// MinOversubscribedShare. The exponent fits the two bursty rows above
// within 10% (0.05^0.25 × 4.6 ms = 2.2 ms against 2.1; 0.18^0.25 × 4.8 ms
// at their 1.57 threads per CPU while oversubscribed = 3.1 ms against
// 3.4). A share of 1 gives the steady level itself.
const (
	// MinOversubscribedShare is the share of the window's time, taken as
	// its share of wakeups, from which the oversubscribed moments set the
	// p99: 1% of them.
	MinOversubscribedShare = 0.01
	// OversubscribedExponent is how the p99 grows with that share.
	OversubscribedExponent = 0.25
)

// RunqP99Oversubscribed is the run-queue p99 (µs) and its log-spread of a
// window that spent share (0..1) of its time with more runnable threads
// than CPUs, at overLoad threads per CPU (> 1) on average during it; 0
// where share is under MinOversubscribedShare or overLoad is not over 1.
func (c *Calibration) RunqP99Oversubscribed(share, overLoad float64) (p99, sigma float64) {
	if !(share >= MinOversubscribedShare) || !(overLoad > 1) {
		return 0, 0
	}
	lv := c.CPUAt(overLoad)
	return lv.RunqP99Us * math.Pow(math.Min(1, share), OversubscribedExponent), lv.RunqP99Sigma
}
