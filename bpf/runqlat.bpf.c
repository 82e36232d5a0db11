//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Run-queue latency: the time from a task becoming runnable (wakeup, new
 * task, or preemption while still runnable) to it being switched in.
 *
 * Three tiers of the same logic, the loader picks the first that loads and
 * attaches: tp_btf (typed task pointers, task-local storage for the start
 * timestamp: no hashing on the hot path), raw_tp (CO-RE reads, pid-keyed
 * hash), and classic tracepoints (the tracepoint record's pids, pid hash).
 *
 * Cost notes: the switch path does one task-storage lookup and one per-CPU
 * array update; the cgroup walk only runs while user space watches cgroups
 * (config flag), so the node-wide histogram costs nothing extra. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "triage_signals.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} runqlat_task_ts SEC(".maps");

/* Bounded: when full, new enqueues are not timed (lost samples, no error). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} runqlat_pid_ts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct triage_hist);
} runqlat_hist SEC(".maps");

/* Watched cgroups: user space inserts a zeroed histogram per cgroup id;
 * presence of the key is what "watched" means. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct triage_hist);
} runqlat_cgroup_hist SEC(".maps");

/* [0] flags, [1] sample mask: enqueues are timed when (n & mask) == 0, n a
 * per-CPU enqueue counter; mask 0 times every enqueue. */
#define RUNQLAT_CFG_SAMPLE_MASK 1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} runqlat_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} runqlat_sample_ctr SEC(".maps");

/* sampled decides whether this enqueue is timed. Skipping 3 of 4 (mask 3)
 * leaves the switch path a storage lookup that finds no stamp, and the
 * wakeup path two inlined array reads: percentiles stay unbiased (the
 * choice does not depend on the latency) with a quarter of the samples. */
static __always_inline int sampled(void)
{
	__u32 k = RUNQLAT_CFG_SAMPLE_MASK, z = 0, *mask, *n;

	mask = bpf_map_lookup_elem(&runqlat_config, &k);
	if (!mask || *mask == 0)
		return 1;
	n = bpf_map_lookup_elem(&runqlat_sample_ctr, &z);
	if (!n)
		return 1;
	return ((*n)++ & *mask) == 0;
}

static __always_inline int watching_cgroups(void)
{
	__u32 k = TRIAGE_CFG_FLAGS;
	__u32 *flags = bpf_map_lookup_elem(&runqlat_config, &k);
	return flags && (*flags & TRIAGE_FLAG_WATCH_CGROUPS);
}

static __always_inline void record_node(__u64 delta)
{
	__u32 k = 0;
	struct triage_hist *h = bpf_map_lookup_elem(&runqlat_hist, &k);
	if (h)
		triage_hist_add(h, delta);
}

/* ---- tier 1: tp_btf ---------------------------------------------------- */

static __always_inline void btf_enqueue(struct task_struct *p)
{
	__u64 *ts;

	if (p->pid == 0 || !sampled()) /* idle task, or not sampled */
		return;
	ts = bpf_task_storage_get(&runqlat_task_ts, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts)
		*ts = bpf_ktime_get_ns();
}

static __always_inline void btf_record_cgroup(struct task_struct *p, __u64 delta)
{
	struct cgroup *cg = p->cgroups->dfl_cgrp;

	for (int i = 0; i < TRIAGE_CGROUP_DEPTH && cg; i++) {
		__u64 id = cg->kn->id;
		struct triage_hist *h = bpf_map_lookup_elem(&runqlat_cgroup_hist, &id);
		if (h) {
			triage_hist_add(h, delta);
			return;
		}
		struct cgroup_subsys_state *parent = cg->self.parent;
		if (!parent)
			return;
		cg = parent->cgroup;
	}
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(runqlat_btf_wakeup, struct task_struct *p)
{
	btf_enqueue(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(runqlat_btf_wakeup_new, struct task_struct *p)
{
	btf_enqueue(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(runqlat_btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 *ts, delta;

	if (prev->__state == TASK_RUNNING)
		btf_enqueue(prev);
	if (next->pid == 0)
		return 0;
	ts = bpf_task_storage_get(&runqlat_task_ts, next, 0, 0);
	if (!ts || *ts == 0)
		return 0;
	delta = bpf_ktime_get_ns() - *ts;
	*ts = 0;
	record_node(delta);
	if (watching_cgroups())
		btf_record_cgroup(next, delta);
	return 0;
}

/* ---- shared by tiers 2 and 3: pid-keyed start times -------------------- */

static __always_inline void pid_enqueue(__u32 pid)
{
	__u64 now;

	if (pid == 0 || !sampled())
		return;
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&runqlat_pid_ts, &pid, &now, BPF_ANY);
}

/* Returns the wait in ns, or 0 when the task's enqueue was not seen. */
static __always_inline __u64 pid_dequeue(__u32 pid)
{
	__u64 *ts, delta;

	if (pid == 0)
		return 0;
	ts = bpf_map_lookup_elem(&runqlat_pid_ts, &pid);
	if (!ts)
		return 0;
	delta = bpf_ktime_get_ns() - *ts;
	bpf_map_delete_elem(&runqlat_pid_ts, &pid);
	return delta;
}

/* ---- tier 2: raw_tp ---------------------------------------------------- */

static __always_inline void raw_record_cgroup(struct task_struct *p, __u64 delta)
{
	struct cgroup *cg = BPF_CORE_READ(p, cgroups, dfl_cgrp);

	for (int i = 0; i < TRIAGE_CGROUP_DEPTH && cg; i++) {
		__u64 id = BPF_CORE_READ(cg, kn, id);
		struct triage_hist *h = bpf_map_lookup_elem(&runqlat_cgroup_hist, &id);
		if (h) {
			triage_hist_add(h, delta);
			return;
		}
		struct cgroup_subsys_state *parent = BPF_CORE_READ(cg, self.parent);
		if (!parent)
			return;
		cg = BPF_CORE_READ(parent, cgroup);
	}
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(runqlat_raw_wakeup, struct task_struct *p)
{
	pid_enqueue(BPF_CORE_READ(p, pid));
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(runqlat_raw_wakeup_new, struct task_struct *p)
{
	pid_enqueue(BPF_CORE_READ(p, pid));
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(runqlat_raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 delta;

	if (BPF_CORE_READ(prev, __state) == TASK_RUNNING)
		pid_enqueue(BPF_CORE_READ(prev, pid));
	delta = pid_dequeue(BPF_CORE_READ(next, pid));
	if (delta == 0)
		return 0;
	record_node(delta);
	if (watching_cgroups())
		raw_record_cgroup(next, delta);
	return 0;
}

/* ---- tier 3: classic tracepoints --------------------------------------- */
/* The record carries pids only, so per-cgroup histograms are not available
 * on this tier (the next task is not current at sched_switch). */

SEC("tracepoint/sched/sched_wakeup")
int runqlat_tp_wakeup(struct trace_event_raw_sched_wakeup_template *ctx)
{
	pid_enqueue(ctx->pid);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup_new")
int runqlat_tp_wakeup_new(struct trace_event_raw_sched_wakeup_template *ctx)
{
	pid_enqueue(ctx->pid);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int runqlat_tp_switch(struct trace_event_raw_sched_switch *ctx)
{
	__u64 delta;

	if (ctx->prev_state == TASK_RUNNING)
		pid_enqueue(ctx->prev_pid);
	delta = pid_dequeue(ctx->next_pid);
	if (delta)
		record_node(delta);
	return 0;
}
