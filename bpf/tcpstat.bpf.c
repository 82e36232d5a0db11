//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* TCP retransmits and socket state changes, as per-CPU counters. Segments
 * sent come from /proc/net/snmp in user space (a counter the kernel keeps
 * anyway), so the retransmit fraction costs one increment per retransmit. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define TCP_ESTABLISHED 1
#define TCP_CLOSE 7
#define IPPROTO_TCP 6

/* Mirrored by bpf.TCPCounters in tcpstat.go. */
struct tcpstat_counters {
	__u64 retransmits;
	__u64 state_changes;
	__u64 established;
	__u64 closed;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpstat_counters);
} tcpstat_counters SEC(".maps");

static __always_inline struct tcpstat_counters *counters(void)
{
	__u32 k = 0;
	return bpf_map_lookup_elem(&tcpstat_counters, &k);
}

static __always_inline void retransmit(void)
{
	struct tcpstat_counters *c = counters();
	if (c)
		c->retransmits++;
}

static __always_inline void state_change(int newstate)
{
	struct tcpstat_counters *c = counters();
	if (!c)
		return;
	c->state_changes++;
	if (newstate == TCP_ESTABLISHED)
		c->established++;
	else if (newstate == TCP_CLOSE)
		c->closed++;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcpstat_btf_retransmit) { retransmit(); return 0; }

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcpstat_btf_state, const struct sock *sk, const int oldstate, const int newstate)
{
	if (sk->sk_protocol == IPPROTO_TCP)
		state_change(newstate);
	return 0;
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcpstat_raw_retransmit) { retransmit(); return 0; }

SEC("raw_tp/inet_sock_set_state")
int BPF_PROG(tcpstat_raw_state, const struct sock *sk, const int oldstate, const int newstate)
{
	if (BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP)
		state_change(newstate);
	return 0;
}

SEC("tracepoint/tcp/tcp_retransmit_skb")
int tcpstat_tp_retransmit(void *ctx) { retransmit(); return 0; }

SEC("tracepoint/sock/inet_sock_set_state")
int tcpstat_tp_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
	if (ctx->protocol == IPPROTO_TCP)
		state_change(ctx->newstate);
	return 0;
}
