package wire

import "math"

// ReserveShare reads a background_reserve field (DecideResponse,
// NodeState): the share of the executor's workers that background work
// must leave free, and ok. ok is false for 0 (not sent: an agent from
// before the field) and for anything outside (0, 1] or NaN, which an
// executor must not act on; it keeps the share it had.
func ReserveShare(x float32) (share float64, ok bool) {
	if !(x > 0 && x <= 1) { // NaN fails both comparisons
		return 0, false
	}
	return float64(x), true
}

// NoReserve is the background_reserve the agent sends where it holds
// nothing back from background work (policy.NoForegroundToProtect): 0
// itself means "not sent" (an agent from before the field), so "none" is
// a share under one worker of any executor up to a million workers, which
// an executor that rounds its reserve down (policy.ReserveWorkers) reads
// as no worker held, whether or not it knows this constant.
const NoReserve float32 = 1e-6

// ReserveField is the background_reserve field for a reserve share:
// NoReserve for none (0 or less), else the share.
func ReserveField(share float64) float32 {
	if share <= 0 {
		return NoReserve
	}
	return float32(share)
}

// ShortMs reads a background_short_ms field (DecideResponse, NodeState):
// the expected cost (ms) up to which a background task may start while the
// reserve holds more than the calm quarter. Anything not finite and
// positive (0: none may, or an agent from before the field) reads 0, which
// an executor takes as none.
func ShortMs(x float32) float64 { return limitMs(x) }

// UrgentSLAMs reads a background_urgent_sla_ms field (DecideResponse,
// NodeState): the SLA (ms) up to which a background task that can still
// meet it may start whatever the reserve holds. Anything not finite and
// positive (0: none, or an agent from before the field) reads 0, which an
// executor takes as none.
func UrgentSLAMs(x float32) float64 { return limitMs(x) }

// limitMs is x where it is a limit an executor may act on (finite and
// positive), else 0: none.
func limitMs(x float32) float64 {
	if !(x > 0) || math.IsInf(float64(x), 1) { // NaN fails the comparison
		return 0
	}
	return float64(x)
}
