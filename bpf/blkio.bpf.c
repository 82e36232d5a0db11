//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Block I/O latency, issue to completion, one log2 histogram per device.
 *
 * tp_btf and raw_tp key the start time by request pointer and read the
 * device from the request; the classic tracepoint tier keys by (dev, sector)
 * as the tracepoint record has no request pointer (like bcc biolatency's
 * tracepoint mode). Device numbers are the kernel's dev_t (major<<20|minor). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "triage_signals.h"

char LICENSE[] SEC("license") = "GPL";

#define MINORBITS 20

struct blkio_start {
	__u64 ts;
	__u32 dev;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* struct request * */
	__type(value, struct blkio_start);
} blkio_rq_start SEC(".maps");

struct blkio_sector_key {
	__u32 dev;
	__u32 pad;
	__u64 sector;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct blkio_sector_key);
	__type(value, __u64);
} blkio_sector_start SEC(".maps");

/* Bounded device count: a node with more than 128 block devices loses the
 * histograms of the extra ones (counted in blkio_dropped), never memory. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, struct triage_hist);
} blkio_dev_hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} blkio_dropped SEC(".maps");

static struct triage_hist zero_hist;

static __always_inline void record(__u32 dev, __u64 delta)
{
	struct triage_hist *h = bpf_map_lookup_elem(&blkio_dev_hist, &dev);

	if (!h) {
		bpf_map_update_elem(&blkio_dev_hist, &dev, &zero_hist, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&blkio_dev_hist, &dev);
		if (!h) {
			__u32 k = 0;
			__u64 *d = bpf_map_lookup_elem(&blkio_dropped, &k);
			if (d)
				(*d)++;
			return;
		}
	}
	triage_hist_add(h, delta);
}

static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	if (!disk)
		return 0;
	return ((__u32)BPF_CORE_READ(disk, major) << MINORBITS) | (__u32)BPF_CORE_READ(disk, first_minor);
}

static __always_inline void rq_issue(struct request *rq, __u32 dev)
{
	__u64 key = (__u64)rq;
	struct blkio_start s = { .ts = bpf_ktime_get_ns(), .dev = dev };

	bpf_map_update_elem(&blkio_rq_start, &key, &s, BPF_ANY);
}

static __always_inline void rq_complete(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct blkio_start *s = bpf_map_lookup_elem(&blkio_rq_start, &key);

	if (!s)
		return;
	record(s->dev, bpf_ktime_get_ns() - s->ts);
	bpf_map_delete_elem(&blkio_rq_start, &key);
}

/* ---- tier 1: tp_btf ---------------------------------------------------- */

SEC("tp_btf/block_rq_issue")
int BPF_PROG(blkio_btf_issue, struct request *rq)
{
	rq_issue(rq, disk_dev(rq->q->disk));
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(blkio_btf_complete, struct request *rq)
{
	rq_complete(rq);
	return 0;
}

/* ---- tier 2: raw_tp ---------------------------------------------------- */

SEC("raw_tp/block_rq_issue")
int BPF_PROG(blkio_raw_issue, struct request *rq)
{
	rq_issue(rq, disk_dev(BPF_CORE_READ(rq, q, disk)));
	return 0;
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(blkio_raw_complete, struct request *rq)
{
	rq_complete(rq);
	return 0;
}

/* ---- tier 3: classic tracepoints --------------------------------------- */

SEC("tracepoint/block/block_rq_issue")
int blkio_tp_issue(struct trace_event_raw_block_rq *ctx)
{
	struct blkio_sector_key key = { .dev = ctx->dev, .sector = ctx->sector };
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&blkio_sector_start, &key, &now, BPF_ANY);
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int blkio_tp_complete(struct trace_event_raw_block_rq_completion *ctx)
{
	struct blkio_sector_key key = { .dev = ctx->dev, .sector = ctx->sector };
	__u64 *ts = bpf_map_lookup_elem(&blkio_sector_start, &key);

	if (!ts)
		return 0;
	record(ctx->dev, bpf_ktime_get_ns() - *ts);
	bpf_map_delete_elem(&blkio_sector_start, &key);
	return 0;
}
