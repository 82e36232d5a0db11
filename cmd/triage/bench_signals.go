package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/triage-agent/triage/bpf"
	"golang.org/x/sys/unix"
)

func init() { registerBench("signals", runBenchSignals) }

// signalsBenchResult is the JSON of `triage bench signals --json`.
type signalsBenchResult struct {
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
	Programs []progCost `json:"programs"`
	// FloorNsPerRun is an empty tp_btf program on sched_switch: the fixed
	// cost of running any BPF program on that hook on this machine.
	FloorNsPerRun float64 `json:"floor_ns_per_run"`

	Footprint map[string]*footprint `json:"footprint,omitempty"`
}

type progCost struct {
	Name     string  `json:"name"`
	RunCount uint64  `json:"run_cnt"`
	NsPerRun float64 `json:"ns_per_run"`
}

func runBenchSignals(args []string) error {
	fs := newFlagSet("bench signals", "cost of the kernel-signal probes: BPF ns per event, added ns per context switch and per syscall (with and without, side by side), and the signals layer's RSS and CPU")
	asJSON := fs.Bool("json", false, "print one JSON object as the last line")
	rounds := fs.Int("rounds", 20000, "ping-pong round trips per run (2 context switches each)")
	calls := fs.Int("calls", 200000, "getppid calls per run")
	reps := fs.Int("reps", 11, "alternating without/with runs; medians and minima are reported")
	tierName := fs.String("tier", "auto", "tier of the probes: auto|tp_btf|raw_tp|tracepoint")
	peer := fs.Bool("peer", true, "also measure bpftrace's runqlat on the same ping-pong, when bpftrace is installed")
	fpDur := fs.Duration("footprint", 10*time.Second, "run a triage signals child this long, idle and under load, and report its RSS and CPU (0: skip)")
	if err := parseFlags(fs, args); err != nil {
		return helpIsNotAnError(err)
	}
	if *rounds < 1000 || *rounds > 10_000_000 || *calls < 1000 || *calls > 100_000_000 || *reps < 1 || *reps > 50 {
		return fmt.Errorf("--rounds in [1000, 1e7], --calls in [1000, 1e8], --reps in [1, 50]")
	}
	tier, err := bpf.ParseTier(*tierName)
	if err != nil {
		return err
	}
	res := &signalsBenchResult{Machine: signalsMachineName(), Reps: *reps}
	if err := benchSwitches(res, tier, *rounds, *reps, *peer); err != nil {
		return err
	}
	if err := benchSyscalls(res, tier, *calls, *reps); err != nil {
		return err
	}
	if err := benchProgStats(res, tier, *rounds, *calls); err != nil {
		return err
	}
	if *fpDur > 0 {
		if err := benchFootprint(res, *fpDur); err != nil {
			return err
		}
	}
	printSignalsBench(res)
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Println(string(b))
	}
	return nil
}

func signalsMachineName() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.IndexByte(l, ':'); i >= 0 {
					cpu = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	var u unix.Utsname
	unix.Uname(&u)
	return fmt.Sprintf("%s, %d CPUs, kernel %s", cpu, runtime.NumCPU(), unix.ByteSliceToString(u.Release[:]))
}

// minOf is the least-disturbed run: on a shared machine other tasks only
// ever add time, so the minimum of many short runs is the best estimate of
// the intrinsic cost, the median the typical one.
func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		if x < m {
			m = x
		}
	}
	return m
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// pingPong runs rounds pipe round trips between two threads pinned to the
// same CPU and returns ns per context switch (2 per round trip).
func pingPong(rounds int) (float64, error) {
	var p1, p2 [2]int
	if err := unix.Pipe2(p1[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	if err := unix.Pipe2(p2[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	defer func() {
		for _, fd := range []int{p1[0], p1[1], p2[0], p2[1]} {
			unix.Close(fd)
		}
	}()
	var set unix.CPUSet
	set.Set(0)
	pin := func() error {
		runtime.LockOSThread()
		return unix.SchedSetaffinity(0, &set)
	}
	errc := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		defer runtime.UnlockOSThread()
		if err := pin(); err != nil {
			errc <- err
			close(ready)
			return
		}
		close(ready)
		b := []byte{0}
		for i := 0; i < rounds; i++ {
			if _, err := unix.Read(p1[0], b); err != nil {
				errc <- err
				return
			}
			if _, err := unix.Write(p2[1], b); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	<-ready
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	unix.SchedGetaffinity(0, &old)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return 0, err
	}
	defer unix.SchedSetaffinity(0, &old)
	b := []byte{0}
	start := time.Now()
	for i := 0; i < rounds; i++ {
		if _, err := unix.Write(p1[1], b); err != nil {
			return 0, err
		}
		if _, err := unix.Read(p2[0], b); err != nil {
			return 0, err
		}
	}
	el := time.Since(start)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(el.Nanoseconds()) / float64(2*rounds), nil
}

func benchSwitches(res *signalsBenchResult, tier bpf.Tier, rounds, reps int, peer bool) error {
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
	res.SwitchNsSampled4, res.SwitchMinNsSampled4 = median(sampled), minOf(sampled)
	res.SwitchNsBase, res.SwitchNsTriage = median(base), median(with)
	res.SwitchAddedNs = res.SwitchNsTriage - res.SwitchNsBase
	res.SwitchMinNsBase, res.SwitchMinNsTriage = minOf(base), minOf(with)
	res.SwitchMinAddedNs = res.SwitchMinNsTriage - res.SwitchMinNsBase
	if !peer {
		return nil
	}
	if _, err := exec.LookPath("bpftrace"); err != nil {
		return nil
	}
	var peerNs []float64
	for i := 0; i < reps; i++ {
		stop, err := startBpftraceRunqlat()
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench signals: bpftrace peer skipped: %v\n", err)
			return nil
		}
		w, err := pingPong(rounds)
		stop()
		if err != nil {
			return err
		}
		peerNs = append(peerNs, w)
	}
	res.SwitchNsBpftrace = median(peerNs)
	res.SwitchAddedPeer = res.SwitchNsBpftrace - res.SwitchNsBase
	res.SwitchMinNsBpftrace = minOf(peerNs)
	res.SwitchMinAddedPeer = res.SwitchMinNsBpftrace - res.SwitchMinNsBase
	return nil
}

// bpftraceRunqlatScript is the runqlat tool of bpftrace, histogram only.
const bpftraceRunqlatScript = `tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { @qtime[args->pid] = nsecs; }
tracepoint:sched:sched_switch { if (args->prev_state == 0) { @qtime[args->prev_pid] = nsecs; } $ns = @qtime[args->next_pid]; if ($ns) { @usecs = hist((nsecs - $ns) / 1000); } delete(@qtime[args->next_pid]); }
interval:s:120 { exit(); }`

func startBpftraceRunqlat() (stop func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 130*time.Second)
	cmd := exec.CommandContext(ctx, "bpftrace", "-e", bpftraceRunqlatScript)
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Attaching") {
			go func() {
				for sc.Scan() {
				}
			}()
			return func() { cmd.Process.Signal(os.Interrupt); cmd.Wait(); cancel() }, nil
		}
	}
	cancel()
	cmd.Wait()
	return nil, fmt.Errorf("bpftrace did not attach")
}

func getppidLoop(calls int) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	for i := 0; i < calls; i++ {
		unix.Getppid()
	}
	return float64(time.Since(start).Nanoseconds()) / float64(calls)
}

func benchSyscalls(res *signalsBenchResult, tier bpf.Tier, calls, reps int) error {
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
	res.SyscallNsBase, res.SyscallNsUnwatched, res.SyscallNsWatched = median(base), median(unw), median(wat)
	res.SyscallAddedUnwatch = res.SyscallNsUnwatched - res.SyscallNsBase
	res.SyscallAddedWatched = res.SyscallNsWatched - res.SyscallNsBase
	res.SyscallMinNsBase, res.SyscallMinNsUnwatched, res.SyscallMinNsWatched = minOf(base), minOf(unw), minOf(wat)
	return nil
}

// benchProgStats reruns both loads once with kernel BPF stats on (stats
// add their own clock reads, so the side-by-side runs above are without).
func benchProgStats(res *signalsBenchResult, tier bpf.Tier, rounds, calls int) error {
	st, err := bpf.EnableRunStats()
	if err != nil {
		return err
	}
	defer st.Close()
	floor, err := bpf.OpenRunqlatFloor()
	if err != nil {
		return err
	}
	if _, err := pingPong(rounds); err != nil {
		floor.Close()
		return err
	}
	ps, err := floor.Stats()
	floor.Close()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.RunCount > 0 {
			res.FloorNsPerRun = p.NsPerRun()
		}
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
	for _, p := range ps4 {
		res.Programs = append(res.Programs, progCost{Name: p.Name + " (1 in 4)", RunCount: p.RunCount, NsPerRun: p.NsPerRun()})
	}
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
		for _, p := range ps {
			res.Programs = append(res.Programs, progCost{Name: p.Name, RunCount: p.RunCount, NsPerRun: p.NsPerRun()})
		}
	}
	return nil
}

// benchFootprint runs `triage signals --footprint D` as a child, idle and
// while this process makes load (context switches, fsyncs, connections),
// and reports the child's own RSS and CPU: the signals layer alone.
func benchFootprint(res *signalsBenchResult, d time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	res.Footprint = map[string]*footprint{}
	for _, mode := range []string{"idle", "load"} {
		ctx, cancel := context.WithTimeout(context.Background(), d+60*time.Second)
		cmd := exec.CommandContext(ctx, exe, "signals", "--footprint", d.String())
		cmd.Stderr = os.Stderr
		var stopLoad func()
		if mode == "load" {
			stopLoad = startSignalsLoad()
		}
		out, err := cmd.Output()
		if stopLoad != nil {
			stopLoad()
		}
		cancel()
		if err != nil {
			return fmt.Errorf("footprint child (%s): %w", mode, err)
		}
		var fp footprint
		if err := json.Unmarshal(out, &fp); err != nil {
			return fmt.Errorf("footprint child output %q: %w", out, err)
		}
		res.Footprint[mode] = &fp
	}
	return nil
}

// startSignalsLoad keeps every probe busy until stopped: a ping-pong
// (context switches), fsync'd writes (block I/O) and loopback connects
// (TCP state changes), each bounded to one goroutine.
func startSignalsLoad() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					f()
				}
			}
		}()
	}
	loop(func() { pingPong(10000) })
	dir, _ := os.MkdirTemp("", "triage-bench-signals-")
	loop(func() {
		f, err := os.CreateTemp(dir, "w")
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			return
		}
		f.Write(make([]byte, 4096))
		f.Sync()
		f.Close()
		os.Remove(f.Name())
		time.Sleep(5 * time.Millisecond)
	})
	loop(func() { tcpConnectOnce(); time.Sleep(2 * time.Millisecond) })
	return func() { close(done); wg.Wait(); os.RemoveAll(dir) }
}

func printSignalsBench(r *signalsBenchResult) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "machine: %s; tier %s; %d alternating runs, median (min)\n\n", r.Machine, r.Tier, r.Reps)
	fmt.Fprintln(tw, "MEASURE\tWITHOUT\tWITH\tADDED")
	row := func(name string, b, w, bm, wm float64) {
		fmt.Fprintf(tw, "%s\t%.0f (%.0f) ns\t%.0f (%.0f) ns\t%+.0f (%+.0f) ns\n", name, b, bm, w, wm, w-b, wm-bm)
	}
	row("context switch (triage runqlat)", r.SwitchNsBase, r.SwitchNsTriage, r.SwitchMinNsBase, r.SwitchMinNsTriage)
	row("context switch (triage, 1 in 4 sampled)", r.SwitchNsBase, r.SwitchNsSampled4, r.SwitchMinNsBase, r.SwitchMinNsSampled4)
	if r.SwitchNsBpftrace > 0 {
		row("context switch (bpftrace runqlat)", r.SwitchNsBase, r.SwitchNsBpftrace, r.SwitchMinNsBase, r.SwitchMinNsBpftrace)
	}
	row("getppid, probes attached, not watched", r.SyscallNsBase, r.SyscallNsUnwatched, r.SyscallMinNsBase, r.SyscallMinNsUnwatched)
	row("getppid, this process watched", r.SyscallNsBase, r.SyscallNsWatched, r.SyscallMinNsBase, r.SyscallMinNsWatched)
	fmt.Fprintln(tw, "\nPROGRAM\tRUNS\tNS/RUN\t")
	fmt.Fprintf(tw, "(empty tp_btf program: the floor)\t\t%.1f\t\n", r.FloorNsPerRun)
	for _, p := range r.Programs {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", p.Name, p.RunCount, p.NsPerRun)
	}
	if len(r.Footprint) > 0 {
		fmt.Fprintln(tw, "\nSIGNALS LAYER\tRSS\tCPU\tSOURCES")
		for _, m := range []string{"idle", "load"} {
			if f := r.Footprint[m]; f != nil {
				fmt.Fprintf(tw, "%s (%.0f s)\t%.1f MiB\t%.3f %%\t%s\n", m, f.Seconds, f.RSSMiB, f.CPUPercent, f.Sources)
			}
		}
	}
	tw.Flush()
}
