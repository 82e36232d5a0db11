package main

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-agent/triage/flamegraph"
)

func TestSplitPositional(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("out", "", "")
	fs.Bool("v", false, "")
	got := splitPositional(fs, []string{"a.pb.gz", "--out", "p", "-v", "b.pb.gz", "--out=q"})
	want := []string{"--out", "p", "-v", "--out=q", "--", "a.pb.gz", "b.pb.gz"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("splitPositional = %q, want %q", got, want)
	}
}

// writeTestProfile writes a small profile built from plain samples.
func writeTestProfile(t *testing.T, path string, hot int64) {
	t.Helper()
	p, err := flamegraph.BuildProfile([]flamegraph.Sample{
		{Pid: 1, Comm: "app", UserPCs: []uint64{0x401000, 0x402000}, Value: hot},
		{Pid: 1, Comm: "app", UserPCs: []uint64{0x403000, 0x402000}, Value: 10},
	}, flamegraph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := flamegraph.WriteProfile(path, p); err != nil {
		t.Fatal(err)
	}
}

func TestFlamegraphRenderAndDiff(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.pb.gz"), filepath.Join(dir, "b.pb.gz")
	writeTestProfile(t, a, 10)
	writeTestProfile(t, b, 30)
	out := filepath.Join(dir, "r")
	if err := runFlamegraph([]string{"render", a, "--out", out}); err != nil {
		t.Fatalf("render: %v", err)
	}
	for _, suffix := range []string{".pb.gz", ".folded", ".svg"} {
		if st, err := os.Stat(out + suffix); err != nil || st.Size() == 0 {
			t.Fatalf("render wrote no %s: %v", suffix, err)
		}
	}
	folded, _ := os.ReadFile(out + ".folded")
	if !strings.Contains(string(folded), "app;[unknown]+0x402000;[unknown]+0x401000 10") {
		t.Fatalf("folded:\n%s", folded)
	}
	d := filepath.Join(dir, "d")
	if err := runFlamegraph([]string{"diff", a, b, "--out", d}); err != nil {
		t.Fatalf("diff: %v", err)
	}
	diffFolded, _ := os.ReadFile(d + ".folded")
	if !strings.Contains(string(diffFolded), "app;[unknown]+0x402000;[unknown]+0x401000 10 30") {
		t.Fatalf("diff folded:\n%s", diffFolded)
	}
	svg, _ := os.ReadFile(d + ".svg")
	if !strings.Contains(string(svg), "rgb(245,55,55)") || !strings.Contains(string(svg), "rgb(55,55,245)") {
		t.Fatal("diff SVG lacks the full red (grown) and full blue (shrunk) frames")
	}
	// The design's form: triage flamegraph --diff A B.
	if err := runFlamegraph([]string{"--diff", a, b, "--out", d + "2"}); err != nil {
		t.Fatalf("--diff: %v", err)
	}
}

func TestFlamegraphBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pb.gz")
	os.WriteFile(junk, []byte("not a profile"), 0o644)
	for _, args := range [][]string{
		{},
		{"nosuch"},
		{"render"},
		{"render", junk},
		{"render", filepath.Join(dir, "missing.pb.gz")},
		{"diff", junk},
		{"record", "--pid", "1", "--cgroup", "/x"},
		{"record", "--duration", "0s"},
		{"render", "--nosuchflag", junk},
	} {
		if err := runFlamegraph(args); err == nil {
			t.Errorf("triage flamegraph %q succeeded", args)
		}
	}
}

func TestFlamegraphRecordSelf(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("recording needs root (CAP_BPF + CAP_PERFMON)")
	}
	done := make(chan struct{})
	go func() { // something to sample in this process
		x := 1
		for {
			select {
			case <-done:
				return
			default:
				for i := 0; i < 1e6; i++ {
					x = x*31 + i
				}
			}
		}
	}()
	defer close(done)
	out := filepath.Join(t.TempDir(), "self")
	if err := runFlamegraph([]string{"record", "--duration", "1s", "--hz", "199", "--pid", strconv.Itoa(os.Getpid()), "--off-cpu", "--out", out}); err != nil {
		t.Fatalf("record: %v", err)
	}
	for _, p := range []string{out + ".pb.gz", out + ".svg", out + ".folded", out + ".oncpu.pb.gz", out + ".oncpu.svg"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("record did not write %s", p)
		}
	}
	p, err := flamegraph.ReadProfile(out + ".oncpu.pb.gz")
	if err != nil || len(p.Sample) == 0 {
		t.Fatalf("on-CPU profile: %v", err)
	}
}
