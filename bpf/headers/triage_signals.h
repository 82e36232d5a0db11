/* Shared pieces of triage's kernel-signal programs: the log2 histogram
 * layout that bpf/hist.go mirrors and a branch-light log2 (runqlat, blkio,
 * syscalls), the cgroup walk depth (runqlat), and the config flags that
 * bpf/probe.go writes (runqlat, syscalls, accept). */
#ifndef TRIAGE_SIGNALS_H
#define TRIAGE_SIGNALS_H

#define TRIAGE_HIST_SLOTS 64
/* How many cgroup levels above a task's own cgroup are checked against the
 * watched set: a Kubernetes pod's container cgroup sits 1-3 levels below the
 * pod cgroup, so 8 covers every layout seen in practice. */
#define TRIAGE_CGROUP_DEPTH 8

/* slot i counts values in [2^i, 2^(i+1)) nanoseconds (slot 0 also holds 0);
 * sum_ns is the exact total so user space can report an exact mean. */
struct triage_hist {
	__u64 slots[TRIAGE_HIST_SLOTS];
	__u64 sum_ns;
};

static __always_inline __u32 triage_log2_u32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xFFFF) << 4; v >>= r;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u32 triage_log2(__u64 v)
{
	__u32 hi = v >> 32;
	return hi ? triage_log2_u32(hi) + 32 : triage_log2_u32((__u32)v);
}

static __always_inline void triage_hist_add(struct triage_hist *h, __u64 delta)
{
	__u32 slot = triage_log2(delta);
	if (slot >= TRIAGE_HIST_SLOTS)
		slot = TRIAGE_HIST_SLOTS - 1;
	h->slots[slot]++; /* per-CPU value: no atomics needed */
	h->sum_ns += delta;
}

/* Config array indexes shared by the probes. */
#define TRIAGE_CFG_FLAGS 0
#define TRIAGE_FLAG_WATCH_CGROUPS (1u << 0)
#define TRIAGE_FLAG_WATCH_PIDS    (1u << 1)
#define TRIAGE_FLAG_WATCH_ALL     (1u << 2)

#endif
