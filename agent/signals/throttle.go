package signals

import "time"

// throttle lets a source do its expensive reads (procfs counter files that
// the kernel builds by summing per-CPU counters, socket-table walks) at
// most once per period, while cheap BPF map reads run on every tick.
type throttle struct {
	every time.Duration
	last  time.Time
}

// due reports whether a read is due at now and, if so, records it.
func (t *throttle) due(now time.Time) bool {
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		return false
	}
	t.last = now
	return true
}
