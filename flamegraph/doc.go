// Package flamegraph turns stack samples into the files SREs open: pprof
// profiles (google/pprof/profile), folded stacks, interactive SVG flame
// graphs and differential SVGs, and keeps a bounded store of windows on disk.
//
// It takes plain samples (Sample: process, cgroup and raw user / kernel
// program counters) so that it depends on neither the BPF loaders nor the
// agent; symbolisation (kernel from /proc/kallsyms, user from ELF symbol
// tables and Go's pclntab, inline frames from DWARF, demangled C++ and Rust
// names, JIT frames from perf maps, mappings from /proc/PID/maps) lives here
// too, and so does the user-space unwinding of copied stacks
// (Symbolizer.UnwindUser, with the tables of flamegraph/unwind).
package flamegraph
