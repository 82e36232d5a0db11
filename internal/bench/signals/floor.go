package signals

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/triage-agent/triage/bpf"
)

// floor is an empty tp_btf program attached to sched_switch: the fixed
// cost of running any BPF program on that hook on this machine, under
// which no run-queue program can go. It is built here rather than in bpf/
// because only this bench uses it; its two instructions are what clang
// compiles `SEC("tp_btf/sched_switch") int BPF_PROG(f) { return 0; }` to.
type floor struct {
	prog *ebpf.Program
	link link.Link
}

func openFloor() (*floor, error) {
	_ = rlimit.RemoveMemlock() // kernels before 5.11 charge programs to RLIMIT_MEMLOCK; later ones ignore it
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:       "runqlat_floor",
		Type:       ebpf.Tracing,
		AttachType: ebpf.AttachTraceRawTp,
		AttachTo:   "sched_switch",
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("loading the empty tp_btf program: %w", err)
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: prog})
	if err != nil {
		prog.Close()
		return nil, fmt.Errorf("attaching the empty tp_btf program to sched_switch: %w", err)
	}
	return &floor{prog: prog, link: l}, nil
}

// nsPerRun is the kernel's run-time accounting of the program (it counts
// while bpf.EnableRunStats is on): run time over runs, 0 before the first
// run.
func (f *floor) nsPerRun() (float64, error) {
	st, err := f.prog.Stats()
	if err != nil {
		return 0, fmt.Errorf("stats of the empty tp_btf program: %w", err)
	}
	return bpf.ProgramStats{RunCount: st.RunCount, Runtime: st.Runtime}.NsPerRun(), nil
}

func (f *floor) Close() error {
	f.link.Close()
	return f.prog.Close()
}
