// SPDX-License-Identifier: GPL-2.0
// The record profile_sample_copy sends to user space for each sample of a
// process that does not keep frame pointers: the user registers and the
// top of the user stack (for unwinding by .eh_frame in user space, as
// `perf --call-graph dwarf` does), plus the kernel's own walks of the
// kernel stack and of the user stack by frame pointer.
#pragma once

#include "profiler_common.h"

struct profiler_copy {
	u32 pid;  // thread id
	u32 tgid; // process id
	u64 cgroup;
	u64 start_ns; // the process's start time (its leader's), for profile_fp_pids
	u64 ip, sp, bp; // user registers at the sample (or at kernel entry)
	u32 stack_len;   // bytes of user stack copied from sp
	s32 kernel_len;  // bytes in kernel[], or a negative errno
	s32 user_fp_len; // bytes in user_fp[], or a negative errno
	u32 pad;
	char comm[16];
	u64 kernel[PROFILER_STACK_DEPTH];
	u64 user_fp[PROFILER_STACK_DEPTH];
	// One page of slack past the copy limit: the verifier then sees every
	// page-sized read at an offset below PROFILER_COPY_MAX stay in bounds.
	u8 stack[PROFILER_COPY_MAX + PROFILER_PAGE];
};
