package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/triage-agent/triage/agent/profiling"
	"github.com/triage-agent/triage/bpf"
	"github.com/triage-agent/triage/flamegraph"
)

func init() {
	register("flamegraph", "record on-/off-CPU flame graphs, render a pprof file, or diff two", runFlamegraph)
}

const flamegraphUsage = `usage:
  triage flamegraph record --duration D [--pid P | --cgroup PATH] [--off-cpu] [--hz 19] [--unwind auto|dwarf|fp] --out PREFIX
  triage flamegraph render IN.pb.gz --out PREFIX [--sample-type T]
  triage flamegraph diff A.pb.gz B.pb.gz --out PREFIX      (also: triage flamegraph --diff A B --out PREFIX)`

func runFlamegraph(args []string) error {
	if len(args) == 0 {
		return errors.New(flamegraphUsage)
	}
	switch args[0] {
	case "record":
		return runFlamegraphRecord(args[1:])
	case "render":
		return runFlamegraphRender(args[1:])
	case "diff", "--diff", "-diff":
		return runFlamegraphDiff(args[1:])
	case "-h", "--help", "help":
		fmt.Fprintln(os.Stderr, flamegraphUsage)
		return nil
	}
	return fmt.Errorf("unknown flamegraph action %q\n%s", args[0], flamegraphUsage)
}

func runFlamegraphRecord(args []string) error {
	fs := newFlagSet("flamegraph record", "sample stacks with eBPF for a while and write PREFIX.pb.gz, PREFIX.folded, PREFIX.svg")
	duration := fs.Duration("duration", 10*time.Second, "how long to record")
	pid := fs.Uint("pid", 0, "profile only this process (0: every process)")
	cgroup := fs.String("cgroup", "", "profile only this cgroup v2 `path` and its descendants (absolute, or relative to the cgroup v2 mount)")
	offCPU := fs.Bool("off-cpu", false, "PREFIX.* show off-CPU (blocked) time by stack; on-CPU goes to PREFIX.oncpu.*")
	hz := fs.Int("hz", 19, "on-CPU sampling frequency per CPU")
	minBlock := fs.Duration("min-block", time.Millisecond, "shortest off-CPU interval recorded")
	preempted := fs.Bool("off-cpu-preempted", false, "off-CPU also counts preempted tasks (run-queue wait), not only tasks that blocked")
	hook := fs.String("off-cpu-hook", "", "force the sched_switch hook: tp_btf, raw_tp or tracepoint (default: the first that works)")
	unwindFlag := fs.String("unwind", "auto", "how user stacks are walked: auto (stack copies unwound by .eh_frame where the kernel allows, else frame pointers), dwarf, fp")
	stackCopy := fs.Uint("stack-copy-bytes", 16<<10, "user stack copied per sample in dwarf mode (at most 32768)")
	cacheBytes := fs.Int("symbol-cache-bytes", flamegraph.DefaultMaxCacheBytes, "cap on symbol tables, inline indexes, unwind tables and JIT maps held")
	out := fs.String("out", "flamegraph", "output file `prefix`")
	title := fs.String("title", "", "SVG title (default: what was recorded, and when)")
	if done, err := parseCommandFlags(fs, args); done {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *pid != 0 && *cgroup != "" {
		return errors.New("--pid and --cgroup exclude each other")
	}
	if *duration <= 0 {
		return errors.New("--duration must be positive")
	}
	mode, err := profiling.ParseUnwindMode(*unwindFlag)
	if err != nil {
		return err
	}
	if *stackCopy == 0 || *stackCopy > bpf.MaxStackCopyBytes || *cacheBytes <= 0 {
		return fmt.Errorf("--stack-copy-bytes must be in 1..%d and --symbol-cache-bytes positive", bpf.MaxStackCopyBytes)
	}
	cfg := profiling.Config{
		Profiler: bpf.ProfilerOptions{FrequencyHz: *hz, PID: uint32(*pid), OffCPU: *offCPU, OffCPUHook: *hook, OffCPUPreempted: *preempted,
			MinBlock: *minBlock, StackCopyBytes: uint32(*stackCopy)},
		Symbolizer: flamegraph.SymbolizerConfig{MaxCacheBytes: *cacheBytes},
		Unwind:     mode,
	}
	if *cgroup != "" {
		id, level, err := bpf.CgroupFromPath(*cgroup)
		if err != nil {
			return err
		}
		cfg.Profiler.CgroupID, cfg.Profiler.CgroupLevel = id, level
	}
	rec, err := profiling.New(cfg)
	if err != nil {
		return err
	}
	defer rec.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "recording for %v at %d Hz (Ctrl-C to stop early)...\n", *duration, *hz)
	rec.Wait(ctx, *duration)
	res, err := rec.Collect()
	if err != nil {
		return err
	}
	if res.Lost > 0 {
		fmt.Fprintf(os.Stderr, "warning: %d samples dropped (kernel maps full)\n", res.Lost)
	}
	for reason, n := range rec.UnwindFallbacks() {
		fmt.Fprintf(os.Stderr, "note: %d samples partly walked by frame pointers (%s); see the profile's comments\n", n, reason)
	}
	what := "every process"
	if *pid != 0 {
		what = fmt.Sprintf("pid %d", *pid)
	} else if *cgroup != "" {
		what = "cgroup " + *cgroup
	}
	when := res.Window.Start.UTC().Format(time.RFC3339)
	onPrefix, offPrefix := *out, ""
	if *offCPU {
		onPrefix, offPrefix = *out+".oncpu", *out
	}
	var wrote []string
	if res.OnCPU != nil {
		t := *title
		if t == "" || *offCPU {
			t = fmt.Sprintf("On-CPU, %s, %s, %v", what, when, res.Window.End.Sub(res.Window.Start).Round(time.Millisecond))
		}
		paths, err := flamegraph.WriteFiles(onPrefix, res.OnCPU, flamegraph.SVGOptions{Title: t})
		if err != nil {
			return err
		}
		wrote = append(wrote, paths...)
	} else if !*offCPU {
		return fmt.Errorf("no on-CPU samples for %s in %v", what, *duration)
	}
	if *offCPU {
		if res.OffCPU == nil {
			return fmt.Errorf("no off-CPU time of at least %v for %s in %v", *minBlock, what, *duration)
		}
		t := *title
		if t == "" {
			t = fmt.Sprintf("Off-CPU (blocks >= %v), %s, %s, via %s", *minBlock, what, when, rec.OffCPUHook())
		}
		paths, err := flamegraph.WriteFiles(offPrefix, res.OffCPU, flamegraph.SVGOptions{Title: t})
		if err != nil {
			return err
		}
		wrote = append(wrote, paths...)
	}
	fmt.Println(strings.Join(wrote, "\n"))
	return nil
}

// splitPositional moves positional arguments after the flags, so that
// "render IN.pb.gz --out P" parses like "render --out P IN.pb.gz".
func splitPositional(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); (!ok || !b.IsBoolFlag()) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(flags, "--"), pos...)
}

func runFlamegraphRender(args []string) error {
	fs := newFlagSet("flamegraph render", "convert a pprof file into PREFIX.pb.gz, PREFIX.folded and PREFIX.svg")
	out := fs.String("out", "", "output file `prefix` (default: the input without .pb.gz)")
	sampleType := fs.String("sample-type", "", "sample type to draw (default: the profile's default)")
	title := fs.String("title", "", "SVG title (default: the input file name)")
	if done, err := parseProfileArgs(fs, args, 1, "one input profile"); done {
		return err
	}
	in := fs.Arg(0)
	p, err := flamegraph.ReadProfile(in)
	if err != nil {
		return err
	}
	prefix := *out
	if prefix == "" {
		prefix = strings.TrimSuffix(strings.TrimSuffix(in, ".gz"), ".pb")
	}
	t := *title
	if t == "" {
		t = in
	}
	paths, err := flamegraph.WriteFiles(prefix, p, flamegraph.SVGOptions{Title: t, SampleType: *sampleType})
	if err != nil {
		return err
	}
	fmt.Println(strings.Join(paths, "\n"))
	return nil
}

func runFlamegraphDiff(args []string) error {
	fs := newFlagSet("flamegraph diff", "differential flame graph of B against A: PREFIX.svg and PREFIX.folded (stack countA countB)")
	out := fs.String("out", "diff", "output file `prefix`")
	sampleType := fs.String("sample-type", "", "sample type to compare (default: A's default)")
	if done, err := parseProfileArgs(fs, args, 2, "two profiles A and B"); done {
		return err
	}
	a, err := flamegraph.ReadProfile(fs.Arg(0))
	if err != nil {
		return err
	}
	b, err := flamegraph.ReadProfile(fs.Arg(1))
	if err != nil {
		return err
	}
	opts := flamegraph.SVGOptions{Title: fmt.Sprintf("%s → %s (red: more in B, blue: less)", fs.Arg(0), fs.Arg(1)), SampleType: *sampleType}
	if err := flamegraph.WriteDiffFile(*out+flamegraph.SuffixSVG, a, b, opts); err != nil {
		return err
	}
	if err := flamegraph.WriteDiffFoldedFile(*out+flamegraph.SuffixFolded, a, b, *sampleType); err != nil {
		return err
	}
	fmt.Println(*out + flamegraph.SuffixSVG + "\n" + *out + flamegraph.SuffixFolded)
	return nil
}

// parseProfileArgs is parseCommandFlags for an action that reads profile
// files (render, diff), named before, after or among its flags: done also
// when there are not n of them (want names them in the error).
func parseProfileArgs(fs *flag.FlagSet, args []string, n int, want string) (done bool, err error) {
	addConfigFlag(fs) // before splitPositionalSafe, which looks flags up
	if err := parseFlags(fs, splitPositionalSafe(fs, args)); err != nil {
		return true, helpIsNotAnError(err)
	}
	if fs.NArg() != n {
		return true, fmt.Errorf("want %s, got %d\n%s", want, fs.NArg(), flamegraphUsage)
	}
	return false, nil
}

// splitPositionalSafe is splitPositional for flag sets whose unknown flags
// must still reach fs.Parse (to get its error message).
func splitPositionalSafe(fs *flag.FlagSet, args []string) []string {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && a != "-" && a != "--" && fs.Lookup(name) == nil {
			return args // let Parse report the unknown flag
		}
	}
	return splitPositional(fs, args)
}
