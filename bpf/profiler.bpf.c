//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// On-CPU stack sampler. A perf_event program (software cpu-clock, one event
// per CPU, frequency chosen by user space) records the current task's user
// and kernel stack ids and counts them in a hash map keyed by
// (pid, tgid, cgroup, user stack, kernel stack). Counts are double-buffered by
// a generation flag so user space can drain one map while the other fills.
//
// profile_sample_copy is the same sampler for binaries without frame
// pointers: instead of counting, it sends the user registers and the top
// of the user stack to user space, which unwinds them by .eh_frame. Only
// one of the two programs is loaded and attached.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "profiler_common.h"
#include "profiler_copy.h"

struct profiler_stacks_map profile_stacks SEC(".maps");
struct profiler_counts_map profile_counts0 SEC(".maps");
struct profiler_counts_map profile_counts1 SEC(".maps");
struct profiler_control_map profile_control SEC(".maps");
struct profiler_counter_map profile_lost SEC(".maps");

// profile_count adds one sample to the current generation's counts, with
// the stacks the kernel walks by frame pointer.
static __always_inline int profile_count(struct bpf_perf_event_data *ctx, struct profiler_control *ctl, u32 tid, u32 tgid)
{
	struct profiler_key key = {};
	profiler_key_fill(&key, ctx, &profile_stacks, tid, tgid);
	profiler_counts_add(ctl, &profile_counts0, &profile_counts1, &key, 1, &profile_lost);
	return 0;
}

// profile_sampled_task reads the control record and the current task's
// thread and process ids, and returns the record when the task's sample is
// to be recorded, NULL when it is not: the idle task (tid 0) is not work
// anyone can act on, and the pid / cgroup filter may leave the process out.
// Both samplers start with it.
static __always_inline struct profiler_control *profile_sampled_task(u32 *tid, u32 *tgid)
{
	u32 zero = 0;
	struct profiler_control *ctl = bpf_map_lookup_elem(&profile_control, &zero);
	if (!ctl)
		return NULL;
	u64 id = bpf_get_current_pid_tgid();
	*tid = (u32)id;
	*tgid = id >> 32;
	if (*tid == 0 || !profiler_wanted(ctl, *tgid))
		return NULL;
	return ctl;
}

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	u32 tid, tgid;
	struct profiler_control *ctl = profile_sampled_task(&tid, &tgid);
	if (!ctl)
		return 0;
	return profile_count(ctx, ctl, tid, tgid);
}

// Copy mode. profile_copies carries one struct profiler_copy per sample to
// user space (bounded: when it is full the sample is counted by frame
// pointer instead, and profile_copy_fallback says how often).
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} profile_copies SEC(".maps");

// One scratch record per CPU (max_entries is set to the number of possible
// CPUs from user space). An array keyed by CPU, not a per-CPU array: the
// record is over the 32 KiB per-CPU value limit.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct profiler_copy);
	__uint(max_entries, 1);
} profile_copy_scratch SEC(".maps");

// Processes whose every executable mapping keeps frame pointers (user
// space decides: Go binaries), by tgid, with their start time so a reused
// pid is not mistaken for them: their samples skip the copy.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, u32);
	__type(value, u64);
	__uint(max_entries, 4096);
} profile_fp_pids SEC(".maps");

struct profiler_counter_map profile_copy_fallback SEC(".maps");

SEC("perf_event")
int profile_sample_copy(struct bpf_perf_event_data *ctx)
{
	u32 tid, tgid;
	struct profiler_control *ctl = profile_sampled_task(&tid, &tgid);
	if (!ctl)
		return 0;

	struct task_struct *task = bpf_get_current_task_btf();
	// A kernel thread has no user stack to copy.
	if (!task->mm)
		return profile_count(ctx, ctl, tid, tgid);
	u64 start_ns = task->group_leader->start_time;
	u64 *fp_start = bpf_map_lookup_elem(&profile_fp_pids, &tgid);
	if (fp_start && *fp_start == start_ns)
		return profile_count(ctx, ctl, tid, tgid);

	u32 cpu = bpf_get_smp_processor_id();
	struct profiler_copy *c = bpf_map_lookup_elem(&profile_copy_scratch, &cpu);
	if (!c)
		return profile_count(ctx, ctl, tid, tgid);

	// The user registers: saved at the top of the task's kernel stack when
	// it entered the kernel (the timer interrupt, or a syscall when the
	// sample hit kernel code).
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	c->pid = tid;
	c->tgid = tgid;
	c->cgroup = bpf_get_current_cgroup_id();
	c->start_ns = start_ns;
	c->ip = BPF_CORE_READ(regs, ip);
	c->sp = BPF_CORE_READ(regs, sp);
	c->bp = BPF_CORE_READ(regs, bp);
	bpf_get_current_comm(&c->comm, sizeof(c->comm));
	c->kernel_len = bpf_get_stack(ctx, c->kernel, sizeof(c->kernel), 0);
	c->user_fp_len = bpf_get_stack(ctx, c->user_fp, sizeof(c->user_fp), BPF_F_USER_STACK);

	u32 limit = ctl->copy_bytes;
	if (limit > PROFILER_COPY_MAX)
		limit = PROFILER_COPY_MAX;
	u64 sp = c->sp;
	u32 off = 0;
	for (int i = 0; i < PROFILER_COPY_MAX / PROFILER_PAGE + 1; i++) {
		if (off >= limit)
			break;
		// Up to the end of the page holding sp+off, then whole pages: the
		// copy stops at the first page that cannot be read (the top of
		// the stack, or a goroutine stack's end) and keeps the rest.
		u32 n = PROFILER_PAGE - ((sp + off) & (PROFILER_PAGE - 1));
		if (n > limit - off)
			n = limit - off;
		off &= PROFILER_COPY_MAX - 1;
		n &= 2 * PROFILER_PAGE - 1;
		if (n > PROFILER_PAGE)
			break;
		if (bpf_probe_read_user(&c->stack[off], n, (void *)(sp + off)) != 0)
			break;
		off += n;
	}
	if (off > PROFILER_COPY_MAX)
		off = PROFILER_COPY_MAX;
	c->stack_len = off;
	u64 size = __builtin_offsetof(struct profiler_copy, stack) + off;
	if (size > sizeof(*c))
		return 0;
	if (bpf_ringbuf_output(&profile_copies, c, size, 0) != 0) {
		u32 zero = 0;
		u64 *fb = bpf_map_lookup_elem(&profile_copy_fallback, &zero);
		if (fb)
			*fb += 1;
		return profile_count(ctx, ctl, tid, tgid);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
