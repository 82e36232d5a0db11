package wire

import (
	"fmt"
	"math"
)

// CheckOutcome says why o cannot be used, or nil: its id must be a task id
// (CheckTaskID), its latency_ms, and its service_ms when given, finite
// durations (≥ 0).
func CheckOutcome(o *Outcome) error {
	if err := CheckTaskID(o); err != nil {
		return fmt.Errorf("outcome: %w", err)
	}
	if !isDuration(o.GetLatencyMs()) {
		return fmt.Errorf("outcome %s: latency_ms %v is not a duration", DescribeTaskID(o), o.GetLatencyMs())
	}
	if !isDuration(o.GetServiceMs()) {
		return fmt.Errorf("outcome %s: service_ms %v is not a duration", DescribeTaskID(o), o.GetServiceMs())
	}
	return nil
}

func isDuration(ms float32) bool {
	f := float64(ms)
	return !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0
}
