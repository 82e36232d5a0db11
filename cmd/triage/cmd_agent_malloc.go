package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/triage-agent/triage/agent"
)

// mallocArenasFlag is the flag of `triage agent` that bounds the C heap's
// arenas (agent.DefaultMallocArenas says why).
const mallocArenasFlag = "malloc-arenas"

// arenaLimitEnv is glibc's setting; it reads it once, when the process
// starts, before any Go code runs (by then Go's threads have made their
// arenas), so the agent sets it by executing itself again with it.
const arenaLimitEnv = "MALLOC_ARENA_MAX"

// arenaLimitExec returns the environment to re-execute `triage agent` with
// so that glibc starts with n arenas at most, or nil when there is nothing
// to do: n is 0 (glibc's default), or the operator set MALLOC_ARENA_MAX or
// the glibc.malloc.arena_max tunable (their word wins, and a process that
// was re-executed has it set, so this never loops).
func arenaLimitExec(n int, environ []string) []string {
	if n <= 0 || agent.MallocSetInEnvironment(environ, arenaLimitEnv, "glibc.malloc.arena_max") {
		return nil
	}
	return append(append([]string(nil), environ...), arenaLimitEnv+"="+strconv.Itoa(n))
}

// reexecWithArenaLimit replaces this process (same PID, same arguments)
// with the same binary started with MALLOC_ARENA_MAX=n, when
// arenaLimitExec says so. It only acts when this process is `triage agent`
// itself (os.Args[1]), never in a test binary that calls runAgent. On
// success it does not return; an exec that fails is reported and the agent
// runs on with glibc's default.
func reexecWithArenaLimit(n int) error {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		return nil
	}
	env := arenaLimitExec(n, os.Environ())
	if env == nil {
		return nil
	}
	// /proc/self/exe is this binary even when the file was replaced or
	// removed since it started (an upgrade in place).
	if err := syscall.Exec("/proc/self/exe", os.Args, env); err != nil {
		return fmt.Errorf("re-executing with %s=%d: %w", arenaLimitEnv, n, err)
	}
	return nil
}
