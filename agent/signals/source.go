// Package signals reads the node's kernel signals (run-queue latency,
// accept-queue fill, block I/O and syscall latency, TCP retransmits, CPU
// utilisation) from eBPF where it can and from procfs where it cannot, and
// keeps them as windowed values the agent turns into the state vector,
// metrics and JSON. Each signal says which source feeds it and why.
package signals

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/triage-agent/triage/bpf"
)

// SourceKind names where a signal comes from.
type SourceKind string

const (
	SourceEBPF   SourceKind = "ebpf"
	SourceProcfs SourceKind = "procfs"
	SourceNone   SourceKind = "none"
)

// Source is a signal's origin and, when it is not eBPF, why.
type Source struct {
	Kind   SourceKind `json:"kind"`
	Reason string     `json:"reason,omitempty"`
}

// fallbackSource is the Source of a signal whose eBPF probe failed with
// err and that kind now serves, how saying from what: one wording for
// every source's reason.
func fallbackSource(kind SourceKind, err error, how string) Source {
	return Source{Kind: kind, Reason: "eBPF unavailable (" + err.Error() + "); " + how}
}

// openProbe opens a signal's probe with open, unless bpfErr already says
// eBPF is out on this machine, and records the outcome in status: attached
// at the probe's tier, or the reason it is not. On failure it returns no
// probe and the error, for the signal's fallbackSource.
func openProbe[P interface{ Tier() bpf.Tier }](status *ProbeStatus, bpfErr error, open func() (P, error)) (P, error) {
	var probe P
	if bpfErr == nil {
		probe, bpfErr = open()
	}
	if bpfErr != nil {
		status.Reason = bpfErr.Error()
		var none P
		return none, bpfErr
	}
	status.Attached, status.Tier = true, probe.Tier().String()
	return probe, nil
}

// ProbeStatus is one eBPF probe's state: attached (with its tier) or
// disabled (with the reason).
type ProbeStatus struct {
	Name     string `json:"name"`
	Attached bool   `json:"attached"`
	Tier     string `json:"tier,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// CPUSeconds is the probe's programs' run time in the kernel since they
	// loaded, with Config.ProbeCPUStats (else 0).
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
}

// Num is a measured value; NaN means unknown (no source, or no samples in
// the window) and is written to JSON as null.
type Num float64

// Known reports whether the value was measured.
func (n Num) Known() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// MarshalJSON writes null for an unknown value.
func (n Num) MarshalJSON() ([]byte, error) {
	if !n.Known() {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, float64(n), 'g', 6, 64), nil
}

// UnmarshalJSON reads a number or null (NaN).
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// unknown is the NaN Num.
var unknown = Num(math.NaN())
