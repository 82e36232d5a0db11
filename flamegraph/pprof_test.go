package flamegraph

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBuildProfileOnAndOffCPU(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	samples := []Sample{
		{Kind: OnCPU, Pid: 10, Tid: 11, Comm: "app", UserPCs: []uint64{0x401000, 0x402000}, KernelPCs: []uint64{0xffffffff81000010}, Value: 7},
		{Kind: OnCPU, Pid: 10, Tid: 11, Comm: "app", UserPCs: []uint64{0x401000, 0x402000}, Value: 3},
		{Kind: OffCPU, Pid: 10, Tid: 12, Comm: "app", KernelPCs: []uint64{0xffffffff81000020}, UserMissing: "evicted", Value: 5_000_000},
		{Kind: OnCPU, Pid: 20, Comm: "kthread", Value: 2}, // no stacks at all
		{Kind: OnCPU, Pid: 20, Comm: "zero", Value: 0},    // dropped: weighs nothing
	}
	p, err := BuildProfile(samples, BuildOptions{Window: Window{Start: start, End: start.Add(2 * time.Second), FrequencyHz: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 3 || p.DefaultSampleType != TypeCPU || p.Period != 10_000_000 {
		t.Fatalf("sample types %v default %q period %d", p.SampleType, p.DefaultSampleType, p.Period)
	}
	if len(p.Sample) != 4 {
		t.Fatalf("%d samples, want 4", len(p.Sample))
	}
	if v := p.Sample[0].Value; v[0] != 7 || v[1] != 70_000_000 || v[2] != 0 {
		t.Fatalf("on-CPU values %v", v)
	}
	if v := p.Sample[2].Value; v[2] != 5_000_000 || v[0] != 0 {
		t.Fatalf("off-CPU values %v", v)
	}
	// Unsymbolised frames are kept as [unknown]+0x..., kernel ones as
	// [kernel]+0x..., a lost stack as a placeholder: nothing is dropped.
	var folded bytes.Buffer
	if err := WriteFolded(&folded, p, TypeSamples); err != nil {
		t.Fatal(err)
	}
	want := "app;[unknown]+0x402000;[unknown]+0x401000 3\n" +
		"app;[unknown]+0x402000;[unknown]+0x401000;[kernel]+0xffffffff81000010_[k] 7\n" +
		"kthread;[no stack] 2\n"
	if folded.String() != want {
		t.Fatalf("folded:\n%s\nwant:\n%s", folded.String(), want)
	}
	var off bytes.Buffer
	if err := WriteFolded(&off, p, TypeOffCPU); err != nil {
		t.Fatal(err)
	}
	if off.String() != "app;[user stack evicted];[kernel]+0xffffffff81000020_[k] 5000000\n" {
		t.Fatalf("off-CPU folded: %q", off.String())
	}

	// Round trip through a file.
	path := filepath.Join(t.TempDir(), "p.pb.gz")
	if err := WriteProfile(path, p); err != nil {
		t.Fatal(err)
	}
	back, err := ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Sample) != 4 || back.Sample[0].Label["comm"][0] != "app" || back.DurationNanos != int64(2*time.Second) {
		t.Fatalf("round trip lost data: %v", back)
	}
}

func TestBuildProfileOffCPUOnly(t *testing.T) {
	p, err := BuildProfile([]Sample{{Kind: OffCPU, Pid: 1, KernelPCs: []uint64{0xffffffff81000000}, Value: 100}}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.SampleType) != 1 || p.SampleType[0].Type != TypeOffCPU || p.DefaultSampleType != TypeOffCPU {
		t.Fatalf("off-CPU-only profile types %v", p.SampleType)
	}
}

func TestProfilerFramesAreStripped(t *testing.T) {
	for _, n := range []string{"bpf_prog_1e14100a61da69ae_offcpu_switch_btf", "bpf_trace_run4", "__bpf_trace_sched_switch"} {
		if !isProfilerFrame(n) {
			t.Errorf("%s not recognised as the profiler's own frame", n)
		}
	}
	if isProfilerFrame("schedule") {
		t.Error("schedule taken for a profiler frame")
	}
}

func TestReadProfileRejectsGarbage(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string][]byte{
		"text.pb.gz":  []byte("this is not a profile"),
		"badgz.pb.gz": {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff},
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, content, 0o644)
		if _, err := ReadProfile(path); err == nil {
			t.Errorf("%s parsed", name)
		}
	}
	if _, err := ReadProfile(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file read")
	}
	// A gzip bomb (the bound lowered to 1 MiB to keep the test quick):
	// reading must stop at the decoded bound instead of allocating it all.
	defer func(old int) { maxProfileDecodedBytes = old }(maxProfileDecodedBytes)
	maxProfileDecodedBytes = 1 << 20
	bomb := filepath.Join(dir, "bomb.pb.gz")
	f, _ := os.Create(bomb)
	zw := gzip.NewWriter(f)
	zero := make([]byte, 1<<20)
	for i := 0; i < 4; i++ {
		zw.Write(zero)
	}
	zw.Close()
	f.Close()
	if _, err := ReadProfile(bomb); !errors.Is(err, ErrProfileTooLarge) {
		t.Errorf("gzip bomb: %v, want ErrProfileTooLarge", err)
	}
}

func TestRenderEmptyAndUnknownType(t *testing.T) {
	p, _ := BuildProfile(nil, BuildOptions{})
	var b bytes.Buffer
	if err := WriteSVG(&b, p, SVGOptions{}); !errors.Is(err, ErrEmptyProfile) {
		t.Fatalf("empty profile: %v", err)
	}
	if err := WriteFolded(&b, syntheticProfile(1), "wall"); err == nil || !strings.Contains(err.Error(), "wall") {
		t.Fatalf("unknown sample type: %v", err)
	}
}

func TestDiffColour(t *testing.T) {
	if c := diffColour(0.1, 0.1); c != "rgb(245,55,55)" {
		t.Errorf("largest increase %s, want full red", c)
	}
	if c := diffColour(-0.05, 0.1); c != "rgb(150,150,245)" {
		t.Errorf("half decrease %s", c)
	}
	if c := diffColour(0, 0.1); c != "rgb(245,245,245)" {
		t.Errorf("no change %s", c)
	}
}

func TestDiffNormalises(t *testing.T) {
	// B is A with every count doubled: normalised, nothing changed.
	a := syntheticProfile(1)
	b := syntheticProfile(1)
	for _, s := range b.Sample {
		for i := range s.Value {
			s.Value[i] *= 2
		}
	}
	var out bytes.Buffer
	if err := WriteDiffSVG(&out, a, b, SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), `data-c="rgb(245,5`) || strings.Count(out.String(), `data-c="rgb(245,245,245)"`) != strings.Count(out.String(), `<g class="f"`) {
		t.Fatal("a uniformly scaled profile shows differences")
	}
}

func TestModuleColourStable(t *testing.T) {
	if first, again := moduleColour("net/http", false), moduleColour("net/http", false); first != again {
		t.Fatal("colour not deterministic")
	}
	if moduleColour("net/http", false) == moduleColour("runtime", false) {
		t.Fatal("two packages share a colour (hash collision in the test's pair?)")
	}
}
