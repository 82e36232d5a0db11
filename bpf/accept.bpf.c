//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Accept-queue fill of listening TCP sockets.
 *
 * sk_data_ready is not a tracepoint and fentry is refused on the kernels we
 * target, so instead of hooking the hot path this is a BPF iterator over the
 * TCP socket table (iter/tcp): user space reads it when it samples, the
 * program emits one record per watched LISTEN socket with the current
 * sk_ack_backlog and sk_max_ack_backlog. Zero cost between reads. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "triage_signals.h"

char LICENSE[] SEC("license") = "GPL";

#define TCP_LISTEN 10

/* Watched local ports (host order). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u16);
	__type(value, __u8);
} accept_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} accept_config SEC(".maps");

/* Mirrored by bpf.ListenQueue's wire layout in accept.go. */
struct accept_record {
	__u16 port;
	__u16 family;
	__u32 backlog;
	__u32 max_backlog;
	__u32 pad;
};

SEC("iter/tcp")
int accept_iter(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	struct tcp_sock *tp;
	struct accept_record rec = {};
	__u32 k = TRIAGE_CFG_FLAGS, *flags;
	__u16 port;

	if (!skc || skc->skc_state != TCP_LISTEN)
		return 0;
	port = skc->skc_num;
	flags = bpf_map_lookup_elem(&accept_config, &k);
	if (!flags || !(*flags & TRIAGE_FLAG_WATCH_ALL)) {
		if (!bpf_map_lookup_elem(&accept_ports, &port))
			return 0;
	}
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	rec.port = port;
	rec.family = skc->skc_family;
	rec.backlog = tp->inet_conn.icsk_inet.sk.sk_ack_backlog;
	rec.max_backlog = tp->inet_conn.icsk_inet.sk.sk_max_ack_backlog;
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
