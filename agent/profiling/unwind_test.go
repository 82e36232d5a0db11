package profiling

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// chainShare counts the samples whose leaf frames (the first two names,
// so an inlined callee may sit above it) include leaf, and how many of
// those carry the whole chain (leaf first). It also counts samples where
// inlined is named directly above leaf in the same location.
func chainShare(p *profile.Profile, leaf string, chain []string, inlined string) (leafSamples, withChain, withInline int64) {
	for _, s := range p.Sample {
		names := stackNames(s)
		if len(names) == 0 || names[0] != leaf && (len(names) < 2 || names[1] != leaf) {
			continue
		}
		leafSamples += s.Value[0]
		if containsInOrder(names, chain) {
			withChain += s.Value[0]
		}
		if l := s.Location[0].Line; len(l) >= 2 && l[0].Function.Name == inlined && l[1].Function.Name == leaf {
			withInline += s.Value[0]
		}
	}
	return
}

// TestUnwindWithoutFramePointers profiles programs built with gcc -O2 and
// g++ -O2 (no frame pointers; the hot leaf is frameless and has a
// function inlined into it) and wants the full chain in at least 95% of the
// hot leaf's samples, the inlined function named, C++ names demangled. The
// same run by frame pointers shows what was broken.
func TestUnwindWithoutFramePointers(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		cc, src       string
		leaf, inlined string
		chain         []string
		pprofTop      string // go tool pprof drops template arguments from names
	}{
		{"gcc", "hot.c", "hot_leaf", "mix_step", []string{"hot_leaf", "level_three", "level_two", "level_one", "main"}, "hot_leaf"},
		{"g++", "hot.cpp", "shapes::Kernel<3>::run", "shapes::blend", []string{"shapes::Kernel<3>::run", "shapes::Canvas::paint", "drive", "main"}, "shapes::Kernel::run"},
	} {
		t.Run(c.src, func(t *testing.T) {
			bin := buildNoFPTarget(t, c.cc, c.src)
			cmd := startTarget(t, bin, "30")
			res, used := recordCPUMode(t, cmd.Process.Pid, 600*time.Millisecond, 499, UnwindTables)
			if res.OnCPU == nil {
				t.Fatal("no on-CPU samples")
			}
			leafN, chainN, inlineN := chainShare(res.OnCPU, c.leaf, c.chain, c.inlined)
			_, total := leafTotals(res.OnCPU, 0)
			t.Logf("%d samples for %v of CPU; %d in %s, %d of them with the chain (%.1f%%), %d with %s inlined",
				total, used, leafN, c.leaf, chainN, 100*float64(chainN)/float64(max(leafN, 1)), inlineN, c.inlined)
			if want := int64(used.Seconds() * 499 / 2); total < want {
				t.Fatalf("only %d samples for %v of CPU at 499 Hz, want >= %d", total, used, want)
			}
			if 2*leafN < total {
				t.Fatalf("%s has %d of %d samples", c.leaf, leafN, total)
			}
			if 100*chainN < 95*leafN {
				for _, s := range res.OnCPU.Sample[:min(8, len(res.OnCPU.Sample))] {
					t.Logf("sample x%d: %v", s.Value[0], stackNames(s))
				}
				t.Fatalf("the chain %v is in %d of %d samples of %s, want >= 95%%", c.chain, chainN, leafN, c.leaf)
			}
			if inlineN == 0 {
				t.Fatalf("no sample names %s inlined into %s", c.inlined, c.leaf)
			}
			for _, fn := range res.OnCPU.Function {
				if strings.HasPrefix(fn.Name, "_Z") {
					t.Fatalf("mangled name %q in the profile", fn.Name)
				}
			}
			if !hasComment(res.OnCPU, "unwind: .eh_frame") {
				t.Fatalf("profile comments do not say how stacks were walked: %q", res.OnCPU.Comments)
			}
			checkPprofTopFolded(t, res, c.pprofTop, c.leaf)

			// The same program by frame pointers: the chain is lost.
			fp, _ := recordCPUMode(t, cmd.Process.Pid, 300*time.Millisecond, 499, UnwindFramePointers)
			fpLeaf, fpChain, _ := chainShare(fp.OnCPU, c.leaf, c.chain, c.inlined)
			t.Logf("by frame pointers: %d of %d samples of %s with the chain", fpChain, fpLeaf, c.leaf)
			if fpLeaf == 0 || 2*fpChain >= fpLeaf {
				t.Fatalf("frame pointers alone found the chain in %d of %d samples: the target is not frameless", fpChain, fpLeaf)
			}
		})
	}
}

func hasComment(p *profile.Profile, prefix string) bool {
	for _, c := range p.Comments {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}
