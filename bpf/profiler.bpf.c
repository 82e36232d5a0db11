//go:build ignore

// SPDX-License-Identifier: GPL-2.0
// On-CPU stack sampler. A perf_event program (software cpu-clock, one event
// per CPU, frequency chosen by user space) records the current task's user
// and kernel stack ids and counts them in a hash map keyed by
// (pid, tgid, cgroup, user stack, kernel stack). Counts are double-buffered by
// a generation flag so user space can drain one map while the other fills.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profiler_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(u32));
	__uint(value_size, PROFILER_STACK_DEPTH * sizeof(u64));
	__uint(max_entries, 8192);
} profile_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profiler_key);
	__type(value, u64);
	__uint(max_entries, 10240);
} profile_counts0 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profiler_key);
	__type(value, u64);
	__uint(max_entries, 10240);
} profile_counts1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct profiler_control);
	__uint(max_entries, 1);
} profile_control SEC(".maps");

// profile_lost counts samples that found their map full (bounded memory:
// we drop and count rather than grow).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, u64);
	__uint(max_entries, 1);
} profile_lost SEC(".maps");

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	u32 zero = 0;
	struct profiler_control *ctl = bpf_map_lookup_elem(&profile_control, &zero);
	if (!ctl)
		return 0;

	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id;
	u32 tgid = id >> 32;
	// The idle task (tid 0) is not work anyone can act on.
	if (tid == 0)
		return 0;
	if (!profiler_wanted(ctl, tgid))
		return 0;

	struct profiler_key key = {};
	key.pid = tid;
	key.tgid = tgid;
	key.cgroup = bpf_get_current_cgroup_id();
	key.user_stack = bpf_get_stackid(ctx, &profile_stacks, BPF_F_USER_STACK);
	key.kernel_stack = bpf_get_stackid(ctx, &profile_stacks, 0);
	bpf_get_current_comm(&key.comm, sizeof(key.comm));

	void *counts = ctl->gen & 1 ? (void *)&profile_counts1 : (void *)&profile_counts0;
	u64 *val = bpf_map_lookup_elem(counts, &key);
	if (val) {
		__sync_fetch_and_add(val, 1);
		return 0;
	}
	u64 one = 1;
	if (bpf_map_update_elem(counts, &key, &one, BPF_NOEXIST) != 0) {
		val = bpf_map_lookup_elem(counts, &key);
		if (val) {
			__sync_fetch_and_add(val, 1);
		} else {
			u64 *lost = bpf_map_lookup_elem(&profile_lost, &zero);
			if (lost)
				*lost += 1;
		}
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
