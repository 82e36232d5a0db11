package wire

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
