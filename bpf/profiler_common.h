// SPDX-License-Identifier: GPL-2.0
// Shared by profiler.bpf.c and profiler_offcpu.bpf.c: the aggregation key,
// the control record user space writes, the maps both declare, the in-kernel
// pid / cgroup filter, and how a sample's key is made and counted.
#pragma once

#define PROFILER_STACK_DEPTH 127

// Copy mode (profile_sample_copy): the most user stack one sample copies,
// and the page size it copies by (a read must not cross into an unmapped
// page: bpf_probe_read_user fails the whole read, so the copy goes page by
// page and keeps what it got).
#define PROFILER_COPY_MAX 32768
#define PROFILER_PAGE 4096
#define PROFILER_CGROUP_LEVELS 16

// Off-CPU: also record tasks that were preempted (they wait in the run
// queue, not on a resource). Off by default: on a busy machine preemptions
// are most switches, and each recorded switch walks two stacks.
#define PROFILER_F_PREEMPTED 1

struct profiler_key {
	u32 pid;  // thread id
	u32 tgid; // process id
	u64 cgroup;
	s32 user_stack;   // stack id, negative when the stack was not captured
	s32 kernel_stack; // stack id, negative when the stack was not captured
	char comm[16];
};

struct profiler_control {
	u32 gen;         // which counts map receives samples (bit 0)
	u32 filter_tgid; // 0: every process
	u64 filter_cgroup; // 0: every cgroup; else a cgroup v2 id (inode)
	u32 filter_cgroup_level; // depth of filter_cgroup in the hierarchy
	u32 flags; // PROFILER_F_*
	u64 min_block_ns; // off-CPU: shortest block that is recorded
	u32 copy_bytes; // on-CPU copy mode: bytes of user stack copied per sample (<= PROFILER_COPY_MAX)
	u32 pad;
};

static __always_inline bool profiler_wanted(struct profiler_control *ctl, u32 tgid)
{
	if (ctl->filter_tgid && ctl->filter_tgid != tgid)
		return false;
	if (ctl->filter_cgroup) {
		// Match the cgroup or any descendant: the ancestor at the filter's
		// level is the filter cgroup itself.
		u32 level = ctl->filter_cgroup_level;
		if (level > PROFILER_CGROUP_LEVELS)
			return false;
		if (bpf_get_current_ancestor_cgroup_id(level) != ctl->filter_cgroup)
			return false;
	}
	return true;
}

// The map types both profilers declare (profile_* and offcpu_*): the same
// key and value, so that one drain in user space reads either. The loaders
// (profiler.go, profiler_offcpu.go) set the stack and counts maps'
// max_entries from ProfilerOptions before loading; the sizes here are the
// on-CPU defaults.
struct profiler_stacks_map {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(u32));
	__uint(value_size, PROFILER_STACK_DEPTH * sizeof(u64));
	__uint(max_entries, 8192);
};

// One generation's counts (the control record's gen picks counts0 or
// counts1, so user space drains one while the other fills).
struct profiler_counts_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profiler_key);
	__type(value, u64);
	__uint(max_entries, 10240);
};

struct profiler_control_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct profiler_control);
	__uint(max_entries, 1);
};

// One u64 per CPU that user space sums: the samples that found their counts
// map full (profile_lost, offcpu_lost: bounded memory, we drop and count
// rather than grow), or those that copy mode counted by frame pointer
// instead (profile_copy_fallback).
struct profiler_counter_map {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, u64);
	__uint(max_entries, 1);
};

// profiler_key_fill makes the key of the current task's sample: tid and
// tgid as the caller read them, its cgroup and comm, and its user and
// kernel stacks walked by frame pointer into stacks.
static __always_inline void profiler_key_fill(struct profiler_key *key, void *ctx, void *stacks, u32 tid, u32 tgid)
{
	key->pid = tid;
	key->tgid = tgid;
	key->cgroup = bpf_get_current_cgroup_id();
	key->user_stack = bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
	key->kernel_stack = bpf_get_stackid(ctx, stacks, 0);
	bpf_get_current_comm(&key->comm, sizeof(key->comm));
}

// profiler_counts_add adds delta (one sample, or nanoseconds blocked) to
// key in the current generation's counts map (counts0 or counts1 by gen).
// Two CPUs may insert the same new key at once: the loser of the
// BPF_NOEXIST insert adds to the winner's value. A full map drops the
// sample and counts it in lost.
static __always_inline void profiler_counts_add(struct profiler_control *ctl, void *counts0, void *counts1, struct profiler_key *key, u64 delta, void *lost)
{
	void *counts = ctl->gen & 1 ? counts1 : counts0;
	u64 *val = bpf_map_lookup_elem(counts, key);
	if (val) {
		__sync_fetch_and_add(val, delta);
		return;
	}
	if (bpf_map_update_elem(counts, key, &delta, BPF_NOEXIST) == 0)
		return;
	val = bpf_map_lookup_elem(counts, key);
	if (val) {
		__sync_fetch_and_add(val, delta);
		return;
	}
	u32 zero = 0;
	u64 *n = bpf_map_lookup_elem(lost, &zero);
	if (n)
		*n += 1;
}
