package wire

import (
	"fmt"
	"math"
)

// CheckOutcome says why o cannot be used, or nil: its latency_ms, and its
// service_ms when given, must be finite durations (≥ 0).
func CheckOutcome(o *Outcome) error {
	if !isDuration(o.GetLatencyMs()) {
		return fmt.Errorf("outcome %d: latency_ms %v is not a duration", o.GetId(), o.GetLatencyMs())
	}
	if !isDuration(o.GetServiceMs()) {
		return fmt.Errorf("outcome %d: service_ms %v is not a duration", o.GetId(), o.GetServiceMs())
	}
	return nil
}

func isDuration(ms float32) bool {
	f := float64(ms)
	return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0
}
