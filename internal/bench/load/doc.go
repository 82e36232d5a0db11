// Package load starts the controlled loads that benchmarks and the
// calibration put on a node: always-runnable spinners (CPU contention) and
// writers that write and fsync 64 KiB in a loop (disk contention), each a
// process of its own, in a cgroup of their own where the machine has one,
// at a given nice value and CPU set.
//
// The processes are this binary re-executed with TRIAGE_LOAD_CHILD set:
// the package's init turns such a process into the load and never returns,
// so any binary that imports the package can start loads without a helper
// program on disk. Children never outlive their starter: they die with it
// (PR_SET_PDEATHSIG), notice when they are orphaned, and Close kills them
// all (through cgroup.kill where there is one).
package load
