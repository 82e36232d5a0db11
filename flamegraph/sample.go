package flamegraph

import "time"

// Kind says what a sample's Value measures.
type Kind int

const (
	// OnCPU samples count perf-event ticks; Value is a sample count.
	OnCPU Kind = iota
	// OffCPU samples measure blocked time; Value is nanoseconds.
	OffCPU
)

// Sample is one aggregated stack: a thread of a process in a cgroup, its raw
// user and kernel program counters (leaf first, as the kernel reports them)
// and how much it weighed.
type Sample struct {
	Kind      Kind
	Pid       uint32 // process id (tgid)
	Tid       uint32 // thread id
	Comm      string
	CgroupID  uint64
	UserPCs   []uint64
	KernelPCs []uint64
	// UserMissing / KernelMissing name why a stack is absent when it
	// should not be (e.g. "stack evicted"); such samples keep a placeholder
	// frame instead of being dropped.
	UserMissing   string
	KernelMissing string
	// UnwindReason says why some user frames were walked by frame pointer
	// rather than unwind tables (one of the Fallback* reasons; "" when
	// not), UnwindModule the file whose frame did it first. The profile's
	// comments count them.
	UnwindReason string
	UnwindModule string
	Value        int64
}

// Window is the metadata of one recording: when, and at which frequency.
type Window struct {
	Start, End  time.Time
	FrequencyHz int
}
