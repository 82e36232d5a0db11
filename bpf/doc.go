// Package bpf holds triage's eBPF programs (one *.bpf.c per hook family), the
// committed bpf2go output, and typed loaders that attach, read and close them.
// It imports cilium/ebpf only (and golang.org/x/sys/unix, which cilium/ebpf
// itself builds on).
package bpf
