package policy

// ReserveOnBusyCPUs is the reserve of a node whose run queue says its CPUs
// are oversubscribed (run-queue p99 at ContendedRunqP99Us or more), share
// being Reserve's for it: share as it is while a foreground task has been
// decided within ForegroundGoneMs (foregroundIdleMs under it, or not a
// number), and once the foreground has gone, never more workers held back
// than the executor has beyond cpus, the CPUs its workers share, so that
// background work runs at least one task per CPU. workers or cpus of 0 or
// less (unknown) keep share.
//
// Why: on oversubscribed CPUs a held worker keeps the running ones fast,
// which is what protects the foreground, and where the executor's own
// tasks are what oversubscribes the CPUs (more workers than CPUs) it costs
// the background nothing: the CPUs serve no more work with more tasks
// sharing them. Where a neighbour's threads oversubscribe them, n tasks
// beside k spinners on c CPUs get n·c/(n+k) of them, so with no foreground
// left every worker held back under one per CPU is throughput the
// background loses, and behind it a queue that misses its SLAs (a batch
// class of 229 ms tasks on 6 workers and 4 CPUs beside 4 spinners: 3 held
// served 1.71 CPUs of the 1.95 it needed). Chosen on the generated
// selection sets, checked on the check sets and large-node suites
// (docs/policy-history.md, "A reserve bounded by the CPUs where no
// foreground is left (forty-first session)").
func ReserveOnBusyCPUs(share, foregroundIdleMs float64, workers, cpus int) float64 {
	if !ForegroundGone(foregroundIdleMs) || workers <= 0 || cpus <= 0 {
		return share
	}
	beyond := max(0, workers-cpus)
	held := ReserveWorkers(share, workers)
	if held <= beyond {
		return share
	}
	return float64(beyond) / float64(workers)
}
