package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/triage-agent/triage/agent"
)

// `triage agent` sets two things that its libraries read once, when the
// process starts, by executing itself again (same PID, same arguments) with
// them in the environment: glibc's arena bound and the Go runtime's monitor.

// mallocArenasFlag is the flag of `triage agent` that bounds the C heap's
// arenas (agent.DefaultMallocArenas says why).
const mallocArenasFlag = "malloc-arenas"

// sysmonSleepFlag is the flag that leaves the Go runtime's monitor its deep
// sleep (sysmonTickExec says why the agent's default takes it away).
const sysmonSleepFlag = "go-sysmon-sleep"

// arenaLimitEnv is glibc's setting; it reads it once, when the process
// starts, before any Go code runs (by then Go's threads have made their
// arenas).
const arenaLimitEnv = "MALLOC_ARENA_MAX"

// arenaLimitExec returns environ with MALLOC_ARENA_MAX=n so that glibc
// starts with n arenas at most, or nil when there is nothing to do: n is 0
// (glibc's default), or the operator set MALLOC_ARENA_MAX or the
// glibc.malloc.arena_max tunable (their word wins, and a process that was
// re-executed has it set, so this never loops).
func arenaLimitExec(n int, environ []string) []string {
	if n <= 0 || agent.MallocSetInEnvironment(environ, arenaLimitEnv, "glibc.malloc.arena_max") {
		return nil
	}
	return append(append([]string(nil), environ...), arenaLimitEnv+"="+strconv.Itoa(n))
}

// sysmonTicking is the GODEBUG setting that keeps the Go runtime's monitor
// (sysmon) out of its deep sleep: the runtime never lets it sleep while a
// scheduler trace is due (runtime/proc.go, sysmon), and this one is due
// every 24.8 days (the most milliseconds GODEBUG takes), so in practice it
// prints nothing; a node up that long gets one line on stderr each time.
//
// Why: when every P is idle, sysmon sleeps until the next timer, and the
// next system call or cgo call wakes it (a futex wake) and restarts its
// tick at 20 µs. The agent's work is many short bursts (a decide call, a
// report, a table push), each entering system calls and ONNX Runtime, so
// each burst paid a wake and a few 20 µs ticks: a quarter of the agent's
// CPU, and the wake sits inside every decision's model call. Kept out of
// its deep sleep, sysmon backs off to one tick every 10 ms while it finds
// nothing to retake (docs/footprint-history.md, "The runtime's monitor").
const sysmonTicking = "schedtrace=2147483647"

// sysmonTickExec returns environ with sysmonTicking added to GODEBUG, or
// nil when there is nothing to do: sleep is set (Go's default), or GODEBUG
// already names schedtrace (the operator's word wins, and a re-executed
// agent has it, so this never loops).
func sysmonTickExec(sleep bool, environ []string) []string {
	if sleep {
		return nil
	}
	var debug []string
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			out = append(out, kv)
			continue
		}
		for _, s := range strings.Split(v, ",") {
			if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == "schedtrace" {
				return nil
			}
			if s != "" {
				debug = append(debug, s)
			}
		}
	}
	return append(out, "GODEBUG="+strings.Join(append(debug, sysmonTicking), ","))
}

// reexecEnv is the environment `triage agent` re-executes itself with, or
// nil when it starts as it should already.
func reexecEnv(arenas int, sysmonSleep bool, environ []string) []string {
	env, changed := environ, false
	if e := arenaLimitExec(arenas, env); e != nil {
		env, changed = e, true
	}
	if e := sysmonTickExec(sysmonSleep, env); e != nil {
		env, changed = e, true
	}
	if !changed {
		return nil
	}
	return env
}

// reexecAgent replaces this process with the same binary started with
// reexecEnv's environment, when there is one. It only acts when this
// process is `triage agent` itself (os.Args[1]), never in a test binary
// that calls runAgent. On success it does not return.
func reexecAgent(arenas int, sysmonSleep bool) error {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		return nil
	}
	env := reexecEnv(arenas, sysmonSleep, os.Environ())
	if env == nil {
		return nil
	}
	// /proc/self/exe is this binary even when the file was replaced or
	// removed since it started (an upgrade in place).
	if err := syscall.Exec("/proc/self/exe", os.Args, env); err != nil {
		return fmt.Errorf("re-executing the agent with its start-up environment: %w", err)
	}
	return nil
}
