// Package agentproc runs `triage agent` as a child process for the
// benchmarks that measure the agent from outside (bench e2e, bench soak):
// on loopback ports the kernel picks, with a certificate the caller can
// pin, its CPU time, memory and /metrics its own.
package agentproc
