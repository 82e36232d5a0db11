// Package signals is `triage bench signals`: what the kernel-signal probes
// cost. It measures BPF ns per event, the ns added per context switch and
// per syscall (without and with the probes, alternating, side by side in
// one process, and bpftrace's runqlat on the same load), and the signals
// layer's own RSS and CPU in a child process.
package signals

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/internal/bench/measure"
	"github.com/triage-agent/triage/internal/bench/peer"
)

// Result is the JSON of `triage bench signals --json`. Each side-by-side
// figure is reported as the median of Reps runs and as their minimum: on a
// shared machine other tasks only ever add time, so the minimum of many
// short runs is the best estimate of the intrinsic cost, the median the
// typical one.
type Result struct {
	Machine string `json:"machine"`
	Tier    string `json:"tier"`
	Reps    int    `json:"reps"`

	// Per context switch: a pipe ping-pong between two threads pinned to
	// one CPU (2 switches and 2 wakeups per round trip), medians of Reps
	// alternating runs without and with the run-queue programs attached.
	SwitchNsBase     float64 `json:"switch_ns_base"`
	SwitchNsTriage   float64 `json:"switch_ns_triage"`
	SwitchAddedNs    float64 `json:"switch_added_ns"`
	SwitchNsBpftrace float64 `json:"switch_ns_bpftrace,omitempty"`
	// With --runq-sample 4: one enqueue in 4 timed.
	SwitchNsSampled4    float64 `json:"switch_ns_triage_sample4"`
	SwitchMinNsSampled4 float64 `json:"switch_min_ns_triage_sample4"`
	SwitchAddedPeer     float64 `json:"switch_added_ns_bpftrace,omitempty"`

	// The same runs' minima (least disturbed by other tasks).
	SwitchMinNsBase     float64 `json:"switch_min_ns_base"`
	SwitchMinNsTriage   float64 `json:"switch_min_ns_triage"`
	SwitchMinAddedNs    float64 `json:"switch_min_added_ns"`
	SwitchMinNsBpftrace float64 `json:"switch_min_ns_bpftrace,omitempty"`
	SwitchMinAddedPeer  float64 `json:"switch_min_added_ns_bpftrace,omitempty"`

	// Per getppid(): without the syscall programs, with them attached and
	// nothing watched (every other process on a node), and watching this
	// process (the full timing path).
	SyscallNsBase       float64 `json:"syscall_ns_base"`
	SyscallNsUnwatched  float64 `json:"syscall_ns_unwatched"`
	SyscallNsWatched    float64 `json:"syscall_ns_watched"`
	SyscallAddedUnwatch float64 `json:"syscall_added_ns_unwatched"`
	SyscallAddedWatched float64 `json:"syscall_added_ns_watched"`

	SyscallMinNsBase      float64 `json:"syscall_min_ns_base"`
	SyscallMinNsUnwatched float64 `json:"syscall_min_ns_unwatched"`
	SyscallMinNsWatched   float64 `json:"syscall_min_ns_watched"`

	// Kernel accounting (kernel.bpf_stats_enabled) of each program during
	// one extra with-programs run: run_time_ns / run_cnt.
	Programs []ProgCost `json:"programs"`
	// FloorNsPerRun is an empty tp_btf program on sched_switch: the fixed
	// cost of running any BPF program on that hook on this machine.
	FloorNsPerRun float64 `json:"floor_ns_per_run"`

	Footprint map[string]*Footprint `json:"footprint,omitempty"`
}

// ProgCost is one program's kernel run-time accounting.
type ProgCost struct {
	Name     string  `json:"name"`
	RunCount uint64  `json:"run_cnt"`
	NsPerRun float64 `json:"ns_per_run"`
}

// Options bound one bench.
type Options struct {
	Rounds int      // ping-pong round trips per run (2 context switches each), 1000..1e7
	Calls  int      // getppid calls per run, 1000..1e8
	Reps   int      // alternating without/with runs, 1..50
	Tier   bpf.Tier // tier of the probes
	// Peer also measures bpftrace's runqlat on the same ping-pong, when
	// bpftrace is installed.
	Peer bool
	// Footprint runs a `triage signals --footprint` child this long, idle
	// and under load, and reports its RSS and CPU (0: skip).
	Footprint time.Duration
}

// Run runs the bench.
func Run(o Options) (*Result, error) {
	if o.Rounds < 1000 || o.Rounds > 10_000_000 || o.Calls < 1000 || o.Calls > 100_000_000 || o.Reps < 1 || o.Reps > 50 {
		return nil, errors.New("--rounds in [1000, 1e7], --calls in [1000, 1e8], --reps in [1, 50]")
	}
	res := &Result{Machine: Machine(), Reps: o.Reps}
	if err := benchSwitches(res, o.Tier, o.Rounds, o.Reps, o.Peer); err != nil {
		return nil, err
	}
	if err := benchSyscalls(res, o.Tier, o.Calls, o.Reps); err != nil {
		return nil, err
	}
	if err := benchProgStats(res, o.Tier, o.Rounds, o.Calls); err != nil {
		return nil, err
	}
	if o.Footprint > 0 {
		if err := benchFootprint(res, o.Footprint); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Machine names the CPU, its count and the kernel release.
func Machine() string {
	cpu := measure.CPUModel()
	if cpu == "" {
		cpu = "unknown CPU"
	}
	var u unix.Utsname
	unix.Uname(&u)
	return fmt.Sprintf("%s, %d CPUs, kernel %s", cpu, runtime.NumCPU(), unix.ByteSliceToString(u.Release[:]))
}

func benchSwitches(res *Result, tier bpf.Tier, rounds, reps int, withPeer bool) error {
	pingPong(rounds / 10) // warm up
	var base, with, sampled []float64
	withRunqlat := func(every uint32) (float64, error) {
		r, err := bpf.OpenRunqlat(bpf.RunqlatOptions{Tier: tier, SampleEvery: every})
		if err != nil {
			return 0, err
		}
		defer r.Close()
		res.Tier = r.Tier().String()
		return pingPong(rounds)
	}
	for i := 0; i < reps; i++ {
		b, err := pingPong(rounds)
		if err != nil {
			return fmt.Errorf("ping-pong: %w", err)
		}
		w, err := withRunqlat(1)
		if err != nil {
			return fmt.Errorf("ping-pong: %w", err)
		}
		ws, err := withRunqlat(4)
		if err != nil {
			return fmt.Errorf("ping-pong: %w", err)
		}
		base, with, sampled = append(base, b), append(with, w), append(sampled, ws)
	}
	res.SwitchNsSampled4, res.SwitchMinNsSampled4 = measure.Median(sampled), slices.Min(sampled)
	res.SwitchNsBase, res.SwitchNsTriage = measure.Median(base), measure.Median(with)
	res.SwitchAddedNs = res.SwitchNsTriage - res.SwitchNsBase
	res.SwitchMinNsBase, res.SwitchMinNsTriage = slices.Min(base), slices.Min(with)
	res.SwitchMinAddedNs = res.SwitchMinNsTriage - res.SwitchMinNsBase
	if !withPeer {
		return nil
	}
	if _, err := exec.LookPath("bpftrace"); err != nil {
		return nil
	}
	var peerNs []float64
	for i := 0; i < reps; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 130*time.Second)
		bt, err := peer.StartRunqlat(ctx, 120)
		if err != nil {
			cancel()
			fmt.Fprintf(os.Stderr, "bench signals: bpftrace peer skipped: %v\n", err)
			return nil
		}
		w, err := pingPong(rounds)
		bt.Stop()
		cancel()
		if err != nil {
			return err
		}
		peerNs = append(peerNs, w)
	}
	res.SwitchNsBpftrace = measure.Median(peerNs)
	res.SwitchAddedPeer = res.SwitchNsBpftrace - res.SwitchNsBase
	res.SwitchMinNsBpftrace = slices.Min(peerNs)
	res.SwitchMinAddedPeer = res.SwitchMinNsBpftrace - res.SwitchMinNsBase
	return nil
}

func benchSyscalls(res *Result, tier bpf.Tier, calls, reps int) error {
	getppidLoop(calls / 10)
	var base, unw, wat []float64
	for i := 0; i < reps; i++ {
		base = append(base, getppidLoop(calls))
		s, err := bpf.OpenSyscalls(bpf.SyscallsOptions{Tier: tier})
		if err != nil {
			return err
		}
		unw = append(unw, getppidLoop(calls))
		if err := s.WatchPID(uint32(os.Getpid())); err != nil {
			s.Close()
			return err
		}
		wat = append(wat, getppidLoop(calls))
		s.Close()
	}
	res.SyscallNsBase, res.SyscallNsUnwatched, res.SyscallNsWatched = measure.Median(base), measure.Median(unw), measure.Median(wat)
	res.SyscallAddedUnwatch = res.SyscallNsUnwatched - res.SyscallNsBase
	res.SyscallAddedWatched = res.SyscallNsWatched - res.SyscallNsBase
	res.SyscallMinNsBase, res.SyscallMinNsUnwatched, res.SyscallMinNsWatched = slices.Min(base), slices.Min(unw), slices.Min(wat)
	return nil
}

// benchProgStats reruns both loads once with kernel BPF stats on (stats
// add their own clock reads, so the side-by-side runs above are without).
func benchProgStats(res *Result, tier bpf.Tier, rounds, calls int) error {
	st, err := bpf.EnableRunStats()
	if err != nil {
		return err
	}
	defer st.Close()
	fl, err := openFloor()
	if err != nil {
		return err
	}
	if _, err := pingPong(rounds); err != nil {
		fl.Close()
		return err
	}
	res.FloorNsPerRun, err = fl.nsPerRun()
	fl.Close()
	if err != nil {
		return err
	}
	rs, err := bpf.OpenRunqlat(bpf.RunqlatOptions{Tier: tier, SampleEvery: 4})
	if err != nil {
		return err
	}
	if _, err := pingPong(rounds); err != nil {
		rs.Close()
		return err
	}
	ps4, err := rs.Stats()
	rs.Close()
	if err != nil {
		return err
	}
	res.Programs = append(res.Programs, progCosts(ps4, " (1 in 4)")...)
	r, err := bpf.OpenRunqlat(bpf.RunqlatOptions{Tier: tier})
	if err != nil {
		return err
	}
	defer r.Close()
	s, err := bpf.OpenSyscalls(bpf.SyscallsOptions{Tier: tier})
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := pingPong(rounds); err != nil {
		return err
	}
	getppidLoop(calls)
	s.WatchPID(uint32(os.Getpid()))
	getppidLoop(calls)
	for _, get := range []func() ([]bpf.ProgramStats, error){r.Stats, s.Stats} {
		ps, err := get()
		if err != nil {
			return err
		}
		res.Programs = append(res.Programs, progCosts(ps, "")...)
	}
	return nil
}

// progCosts converts the kernel's accounting, suffixing each name.
func progCosts(ps []bpf.ProgramStats, suffix string) []ProgCost {
	out := make([]ProgCost, 0, len(ps))
	for _, p := range ps {
		out = append(out, ProgCost{Name: p.Name + suffix, RunCount: p.RunCount, NsPerRun: p.NsPerRun()})
	}
	return out
}
