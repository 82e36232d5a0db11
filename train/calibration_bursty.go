package train

import (
	"fmt"
	"math"
)

// The run queue of bursty threads. The calibration's CPU levels are steady
// spinners: N threads that never sleep, whose run-queue p99 stays near
// 60 µs up to one thread per CPU on the development VM. An executor's
// workers are not steady: each runs a task, then takes the next or sleeps,
// so on the same mean load they outnumber the CPUs now and then, and every
// wakeup in those moments waits for a CPU. A one-second histogram's p99 is
// the oversubscribed moments' latency as soon as they hold more than about
// 1% of its wakeups. Measured on the 2-CPU VM (docs/calibration.md,
// "Bursty threads and the run queue"), four bursty processes at a mean of
// 0.5 and 0.8 threads per CPU, oversubscribed 5% and 18% of the time, read
// p99s of 2.1 and 3.4 ms where the steady levels at their mean read
// 50–60 µs and the steady level at 1.5 threads per CPU 4.6 ms.
//
// RunqP99Oversubscribed models it: with share of the window spent with
// more runnable threads than CPUs, at a mean load of overLoad threads per
// CPU during that time, the p99 is the steady level's at overLoad scaled
// by share^e, and nothing (0) while share is under
// MinOversubscribedShare. The exponent e is fitted to the calibration's
// bursty levels (OversubscribedExponent), which `triage calibrate`
// measures; a calibration without them takes DefaultOversubscribedExponent,
// fitted to the two rows above (0.05^0.25 × 4.6 ms = 2.2 ms against 2.1;
// 0.18^0.25 × 4.8 ms at their 1.57 threads per CPU while oversubscribed
// = 3.1 ms against 3.4). A share of 1 gives the steady level itself.
const (
	// MinOversubscribedShare is the share of the window's time, taken as
	// its share of wakeups, from which the oversubscribed moments set the
	// p99: 1% of them.
	MinOversubscribedShare = 0.01
	// DefaultOversubscribedExponent is how the p99 grows with that share
	// where the calibration has no bursty levels.
	DefaultOversubscribedExponent = 0.25
	// The exponent a fit may give: a p99 at or over the steady level's
	// reads 0 (the share does not matter), and 1 is the plain mixture (the
	// p99 in proportion to the share).
	minOversubscribedExponent, maxOversubscribedExponent = 0, 1
)

// BurstyLevel is one level of bursty CPU load: Threads threads that each
// alternate bursts of CPU work (exponential, mean BurstMs of wall time)
// with sleeps, runnable Duty of the time, independently of each other.
type BurstyLevel struct {
	Threads int     `json:"threads"`
	Duty    float64 `json:"duty"`
	BurstMs float64 `json:"burst_ms"`
	// OversubscribedShare is the share of the time more of them are
	// runnable than the machine has CPUs, and OversubscribedLoad their mean
	// threads per CPU then: what the simulator integrates over its window
	// (binomial: each thread runnable Duty of the time).
	OversubscribedShare float64 `json:"oversubscribed_share"`
	OversubscribedLoad  float64 `json:"oversubscribed_load"`
	// The run-queue p99 read (the median of the windows) and the standard
	// deviation of its log, and the CPU utilisation.
	RunqP99Us    float64 `json:"runq_p99_us"`
	RunqP99Sigma float64 `json:"runq_p99_sigma"`
	CPUUtil      float64 `json:"cpu_util"`
}

// Oversubscription is the share of the time that more of threads
// independent threads, each runnable duty of the time, are runnable than
// cpus, and their mean threads per CPU then (0, 0 when it never happens).
func Oversubscription(threads int, duty float64, cpus int) (share, load float64) {
	if threads <= cpus || cpus < 1 || !(duty > 0) || threads > maxOversubscriptionThreads {
		return 0, 0
	}
	duty = math.Min(1, duty)
	var sum float64
	for k := cpus + 1; k <= threads; k++ {
		p := binomial(threads, k, duty)
		share += p
		sum += float64(k) * p
	}
	if share == 0 {
		return 0, 0
	}
	return math.Min(1, share), sum / share / float64(cpus) // the sum may pass 1 by its rounding
}

// maxOversubscriptionThreads bounds the sum Oversubscription takes: a
// calibration's load is a few processes per CPU.
const maxOversubscriptionThreads = 1 << 16

// binomial is P(X = k) for X ~ Binomial(n, p), through logarithms so that
// large n does not overflow.
func binomial(n, k int, p float64) float64 {
	if p >= 1 {
		if k == n {
			return 1
		}
		return 0
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

// OversubscribedExponent is the exponent RunqP99Oversubscribed scales by:
// the mean over the bursty levels that can say it (oversubscribed at
// least MinOversubscribedShare and less than all the time, over 1 thread
// per CPU then) of log(p99 / steady p99 at their load) / log(share),
// within [0, 1]; DefaultOversubscribedExponent without such a level.
func (c *Calibration) OversubscribedExponent() float64 {
	sum, n := 0.0, 0
	for _, b := range c.Bursty {
		if !(b.OversubscribedShare >= MinOversubscribedShare && b.OversubscribedShare < 1) || !(b.OversubscribedLoad > 1) || !(b.RunqP99Us > 0) {
			continue
		}
		steady := c.CPUAt(b.OversubscribedLoad).RunqP99Us
		if !(steady > 0) {
			continue
		}
		e := math.Log(b.RunqP99Us/steady) / math.Log(b.OversubscribedShare)
		sum += math.Max(minOversubscribedExponent, math.Min(maxOversubscribedExponent, e))
		n++
	}
	if n == 0 {
		return DefaultOversubscribedExponent
	}
	return sum / float64(n)
}

// RunqP99Oversubscribed is the run-queue p99 (µs) and its log-spread of a
// window that spent share (0..1) of its time with more runnable threads
// than CPUs, at overLoad threads per CPU (> 1) on average during it; 0
// where share is under MinOversubscribedShare or overLoad is not over 1.
func (c *Calibration) RunqP99Oversubscribed(share, overLoad float64) (p99, sigma float64) {
	if !(share >= MinOversubscribedShare) || !(overLoad > 1) {
		return 0, 0
	}
	lv := c.CPUAt(overLoad)
	return lv.RunqP99Us * math.Pow(math.Min(1, share), c.OversubscribedExponent()), lv.RunqP99Sigma
}

// validateBursty checks the bursty levels, which a calibration may lack.
func (c *Calibration) validateBursty() error {
	for i, b := range c.Bursty {
		name := fmt.Sprintf("bursty[%d]", i)
		if b.Threads < 1 || !(b.Duty > 0 && b.Duty <= 1) || !finite(b.BurstMs) || b.BurstMs <= 0 {
			return badCal("%s: threads must be at least 1, duty in (0, 1] and burst_ms positive, got %d, %v, %v", name, b.Threads, b.Duty, b.BurstMs)
		}
		if !(b.OversubscribedShare >= 0 && b.OversubscribedShare <= 1) {
			return badCal("%s.oversubscribed_share must be in [0, 1], got %v", name, b.OversubscribedShare)
		}
		for _, v := range []float64{b.OversubscribedLoad, b.RunqP99Us, b.RunqP99Sigma, b.CPUUtil} {
			if !finite(v) || v < 0 {
				return badCal("%s: loads, latencies and spreads must be non-negative numbers, got %v", name, v)
			}
		}
	}
	return nil
}
