//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// Off-CPU profiler. On sched_switch the task leaving the CPU (still current)
// has its stacks and the time recorded per thread; when that thread is
// switched in again the blocked time is added to its (pid, stack) key, if it
// was at least min_block_ns. Three attach flavours share one body: tp_btf,
// raw_tp and the classic tracepoint, so older or locked-down kernels still work.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "profiler_common.h"

struct offcpu_start {
	u64 ts;
	struct profiler_key key;
};

struct profiler_stacks_map offcpu_stacks SEC(".maps");

// offcpu_starts is LRU so threads that exit while blocked cannot fill it.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, u32);
	__type(value, struct offcpu_start);
	__uint(max_entries, 16384);
} offcpu_starts SEC(".maps");

struct profiler_counts_map offcpu_counts0 SEC(".maps");
struct profiler_counts_map offcpu_counts1 SEC(".maps");
struct profiler_control_map offcpu_control SEC(".maps");
struct profiler_counter_map offcpu_lost SEC(".maps");

static __always_inline int offcpu_switch(void *ctx, u32 prev_tid, u32 next_tid, bool preempted)
{
	u32 zero = 0;
	struct profiler_control *ctl = bpf_map_lookup_elem(&offcpu_control, &zero);
	if (!ctl)
		return 0;
	u64 now = bpf_ktime_get_ns();

	// prev is still current here: its pid, cgroup and stacks are ours to read.
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32;
	bool wanted = !preempted || (ctl->flags & PROFILER_F_PREEMPTED);
	if (prev_tid != 0 && wanted && profiler_wanted(ctl, tgid)) {
		struct offcpu_start st = {};
		st.ts = now;
		profiler_key_fill(&st.key, ctx, &offcpu_stacks, prev_tid, tgid);
		bpf_map_update_elem(&offcpu_starts, &prev_tid, &st, BPF_ANY);
	}

	if (next_tid == 0)
		return 0;
	struct offcpu_start *st = bpf_map_lookup_elem(&offcpu_starts, &next_tid);
	if (!st)
		return 0;
	u64 delta = now - st->ts;
	struct profiler_key key = st->key;
	bpf_map_delete_elem(&offcpu_starts, &next_tid);
	if (delta < ctl->min_block_ns)
		return 0;

	profiler_counts_add(ctl, &offcpu_counts0, &offcpu_counts1, &key, delta, &offcpu_lost);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return offcpu_switch(ctx, prev->pid, next->pid, preempt);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return offcpu_switch(ctx, BPF_CORE_READ(prev, pid), BPF_CORE_READ(next, pid), preempt);
}

// The classic tracepoint's record layout (format file of sched/sched_switch).
struct offcpu_sched_switch_args {
	u64 common;
	char prev_comm[16];
	s32 prev_pid;
	s32 prev_prio;
	s64 prev_state;
	char next_comm[16];
	s32 next_pid;
	s32 next_prio;
};

SEC("tracepoint/sched/sched_switch")
int offcpu_switch_tp(struct offcpu_sched_switch_args *args)
{
	// prev_state has no S/D/... bit when the task stays runnable (preempted:
	// the 0x100 "+" bit, or a yield).
	return offcpu_switch(args, (u32)args->prev_pid, (u32)args->next_pid, (args->prev_state & 0xff) == 0);
}

char LICENSE[] SEC("license") = "GPL";
