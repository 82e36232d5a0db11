//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Syscall latency (entry to exit) of watched processes or cgroups.
 *
 * raw_syscalls fire on every syscall of every task, so the filter runs
 * first and is cheap: one inlined array read of the flags, then one hash
 * lookup of the tgid (or cgroup id) only when a filter is set. Unwatched
 * tasks never touch the start map. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "triage_signals.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} syscalls_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} syscalls_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64); /* cgroup v2 id */
	__type(value, __u8);
} syscalls_cgroups SEC(".maps");

/* Bounded: a watched task's syscall that finds it full is not timed, and
 * counted in syscalls_untimed. A thread that ends inside a syscall (exit,
 * exit_group) never reaches sys_exit: its stamp is dropped when it exits
 * (sched_process_exit), else such stamps would fill the map on a node
 * whose watched processes come and go. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, __u64);
} syscalls_start SEC(".maps");

/* [0]: syscalls of watched tasks not timed because syscalls_start was full. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} syscalls_untimed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct triage_hist);
} syscalls_hist SEC(".maps");

static __always_inline int watched(void)
{
	__u32 k = TRIAGE_CFG_FLAGS, *flags;
	__u64 id;

	flags = bpf_map_lookup_elem(&syscalls_config, &k);
	if (!flags || *flags == 0)
		return 0;
	if (*flags & TRIAGE_FLAG_WATCH_ALL)
		return 1;
	if (*flags & TRIAGE_FLAG_WATCH_PIDS) {
		__u32 tgid = bpf_get_current_pid_tgid() >> 32;
		if (bpf_map_lookup_elem(&syscalls_pids, &tgid))
			return 1;
	}
	if (*flags & TRIAGE_FLAG_WATCH_CGROUPS) {
		id = bpf_get_current_cgroup_id();
		if (bpf_map_lookup_elem(&syscalls_cgroups, &id))
			return 1;
	}
	return 0;
}

static __always_inline void enter(void)
{
	__u32 tid, k = 0;
	__u64 now, *untimed;

	if (!watched())
		return;
	tid = (__u32)bpf_get_current_pid_tgid();
	now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&syscalls_start, &tid, &now, BPF_ANY) == 0)
		return;
	untimed = bpf_map_lookup_elem(&syscalls_untimed, &k);
	if (untimed)
		(*untimed)++; /* per-CPU value: no atomics needed */
}

static __always_inline void leave(void)
{
	__u32 tid, k = 0;
	__u64 *ts, delta;
	struct triage_hist *h;

	if (!watched())
		return;
	tid = (__u32)bpf_get_current_pid_tgid();
	ts = bpf_map_lookup_elem(&syscalls_start, &tid);
	if (!ts)
		return;
	delta = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&syscalls_start, &tid);
	h = bpf_map_lookup_elem(&syscalls_hist, &k);
	if (h)
		triage_hist_add(h, delta);
}

/* The exiting thread is current at sched_process_exit. A delete of a key
 * that is not there is one hash lookup, per thread exit. */
static __always_inline void forget_exiting(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&syscalls_start, &tid);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(syscalls_btf_enter) { enter(); return 0; }

SEC("tp_btf/sys_exit")
int BPF_PROG(syscalls_btf_exit) { leave(); return 0; }

SEC("raw_tp/sys_enter")
int BPF_PROG(syscalls_raw_enter) { enter(); return 0; }

SEC("raw_tp/sys_exit")
int BPF_PROG(syscalls_raw_exit) { leave(); return 0; }

SEC("tracepoint/raw_syscalls/sys_enter")
int syscalls_tp_enter(void *ctx) { enter(); return 0; }

SEC("tracepoint/raw_syscalls/sys_exit")
int syscalls_tp_exit(void *ctx) { leave(); return 0; }

SEC("tp_btf/sched_process_exit")
int BPF_PROG(syscalls_btf_task_exit) { forget_exiting(); return 0; }

SEC("raw_tp/sched_process_exit")
int BPF_PROG(syscalls_raw_task_exit) { forget_exiting(); return 0; }

SEC("tracepoint/sched/sched_process_exit")
int syscalls_tp_task_exit(void *ctx) { forget_exiting(); return 0; }
