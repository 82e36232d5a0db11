package signals

import "time"

// Snapshot is the latest value of every signal with its source, and the
// state of each eBPF probe. Latencies are over the collector's window.
// Collector.Snapshot copies into a caller-owned Snapshot, reusing its
// slices, so a caller polling with one Snapshot does not allocate.
type Snapshot struct {
	Time     time.Time      `json:"time"`
	RunQueue RunQueueSignal `json:"runq"`
	Accept   AcceptSignal   `json:"accept"`
	Blkio    BlkioSignal    `json:"blkio"`
	Syscall  SyscallSignal  `json:"syscall"`
	TCP      TCPSignal      `json:"tcp"`
	CPU      CPUSignal      `json:"cpu"`
	Probes   []ProbeStatus  `json:"probes"`
}

// RunQueueSignal is run-queue latency (runnable to running). From procfs
// (schedstat of watched pids) P50 and P99 are both the mean wait per
// timeslice: schedstat has no distribution.
type RunQueueSignal struct {
	Source   Source          `json:"source"`
	Latency  Latency         `json:"latency_us"`
	Pressure Num             `json:"pressure_some_avg10"` // /proc/pressure/cpu, fraction
	Cgroups  []CgroupLatency `json:"cgroups,omitempty"`
	// CgroupsOverflow counts the cgroups asked to be watched that the
	// per-cgroup map had no room for (bpf.MaxWatchedCgroups): they have no
	// histogram of their own, and their tasks count node-wide only.
	CgroupsOverflow int `json:"cgroups_overflow,omitempty"`
}

// CgroupLatency is the run-queue latency of one watched cgroup.
type CgroupLatency struct {
	Path    string  `json:"path"`
	ID      uint64  `json:"id"`
	Latency Latency `json:"latency_us"`
}

// AcceptSignal is the fill of the fullest watched listen socket.
type AcceptSignal struct {
	Source    Source     `json:"source"`
	Fill      Num        `json:"fill"`
	Listeners []Listener `json:"listeners,omitempty"`
}

// Listener is one listening socket's accept queue; Max is 0 when unknown.
type Listener struct {
	Port    uint16 `json:"port"`
	Backlog uint32 `json:"backlog"`
	Max     uint32 `json:"max"`
}

// BlkioSignal is block I/O latency over all devices and per device. From
// procfs (diskstats) P50 and P99 are both the mean time per completed I/O.
type BlkioSignal struct {
	Source  Source          `json:"source"`
	Latency Latency         `json:"latency_us"`
	Devices []DeviceLatency `json:"devices,omitempty"`
}

// DeviceLatency is one block device's latency.
type DeviceLatency struct {
	Dev     string  `json:"dev"` // major:minor
	Name    string  `json:"name"`
	Latency Latency `json:"latency_us"`
}

// SyscallSignal is syscall latency of the watched pids and cgroups.
type SyscallSignal struct {
	Source  Source  `json:"source"`
	Latency Latency `json:"latency_us"`
	Watched int     `json:"watched"` // pids + cgroups in the filter
	// PIDsOverflow and CgroupsOverflow count the processes and cgroups
	// asked to be watched that the probe's watch maps had no room for
	// (bpf.MaxSyscallWatchedPIDs, bpf.MaxSyscallWatchedCgroups): their
	// syscalls are not timed.
	PIDsOverflow    int `json:"pids_overflow,omitempty"`
	CgroupsOverflow int `json:"cgroups_overflow,omitempty"`
	// Untimed counts, since the probe loaded, the syscalls of watched
	// tasks that were not timed because bpf.MaxSyscallsInFlight threads
	// already held a stamp.
	Untimed uint64 `json:"untimed,omitempty"`
}

// TCPSignal is TCP retransmits and state changes over the window.
type TCPSignal struct {
	Source          Source `json:"source"`
	RetransFraction Num    `json:"retrans_fraction"` // retransmitted / sent segments
	Retransmits     uint64 `json:"retransmits"`
	OutSegs         uint64 `json:"out_segs"`
	StateChanges    uint64 `json:"state_changes"` // eBPF only
	ListenOverflows uint64 `json:"listen_overflows"`
}

// CPUSignal is node CPU utilisation over the window.
type CPUSignal struct {
	Source   Source `json:"source"`
	Util     Num    `json:"util"`
	Pressure Num    `json:"pressure_some_avg10"`
}

// CopyTo copies s into dst, reusing dst's slices.
func (s *Snapshot) CopyTo(dst *Snapshot) {
	probes, cgs, ls, devs := dst.Probes[:0], dst.RunQueue.Cgroups[:0], dst.Accept.Listeners[:0], dst.Blkio.Devices[:0]
	*dst = *s
	dst.Probes = append(probes, s.Probes...)
	dst.RunQueue.Cgroups = append(cgs, s.RunQueue.Cgroups...)
	dst.Accept.Listeners = append(ls, s.Accept.Listeners...)
	dst.Blkio.Devices = append(devs, s.Blkio.Devices...)
}
