// SPDX-License-Identifier: GPL-2.0
// Shared by profiler.bpf.c and profiler_offcpu.bpf.c: the aggregation key,
// the control record user space writes, and the in-kernel pid / cgroup filter.
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
