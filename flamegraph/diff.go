package flamegraph

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// diffNode is a frame of the merged tree of two profiles, each side
// normalised by its own total so windows of different length compare.
type diffNode struct {
	name     string
	kernel   bool
	a, b     float64 // share of A's and B's total
	children []*diffNode
}

func mergeTrees(a, b *Node, ta, tb float64) *diffNode {
	d := &diffNode{}
	if a != nil {
		d.name, d.kernel, d.a = a.Name, a.Kernel, float64(a.Value)/ta
	}
	if b != nil {
		d.name, d.kernel, d.b = b.Name, b.Kernel, float64(b.Value)/tb
	}
	type pair struct{ a, b *Node }
	kids := map[string]*pair{}
	var order []string
	key := func(n *Node) string {
		if n.Kernel {
			return n.Name + "\x00k"
		}
		return n.Name
	}
	if a != nil {
		for _, c := range a.Children {
			kids[key(c)] = &pair{a: c}
			order = append(order, key(c))
		}
	}
	if b != nil {
		for _, c := range b.Children {
			if p := kids[key(c)]; p != nil {
				p.b = c
			} else {
				kids[key(c)] = &pair{b: c}
				order = append(order, key(c))
			}
		}
	}
	sort.Strings(order)
	for _, k := range order {
		d.children = append(d.children, mergeTrees(kids[k].a, kids[k].b, ta, tb))
	}
	return d
}

// WriteDiffSVG renders B against A: frame width is the mean of the two
// normalised shares (so frames that vanished in B stay visible and widths
// still nest), colour is the change in share: red where B spends more, blue
// where it spends less, intensity by the size of the change relative to the
// largest one.
func WriteDiffSVG(w io.Writer, a, b *profile.Profile, opts SVGOptions) error {
	opts = opts.withDefaults()
	st := opts.SampleType
	if st == "" {
		i, err := SampleIndex(a, "")
		if err != nil {
			return err
		}
		st = a.SampleType[i].Type
	}
	ta, err := BuildTree(a, st)
	if err != nil {
		return fmt.Errorf("profile A: %w", err)
	}
	tb, err := BuildTree(b, st)
	if err != nil {
		return fmt.Errorf("profile B: %w", err)
	}
	root := mergeTrees(ta, tb, float64(ta.Value), float64(tb.Value))
	maxAbs := 0.0
	var scan func(n *diffNode)
	scan = func(n *diffNode) {
		for _, c := range n.children {
			maxAbs = math.Max(maxAbs, math.Abs(c.b-c.a))
			scan(c)
		}
	}
	scan(root)
	minFrac := opts.MinWidth / float64(opts.Width-2*svgPad)
	var frames []svgFrame
	var walk func(n *diffNode, x float64, depth int)
	walk = func(n *diffNode, x float64, depth int) {
		width := (n.a + n.b) / 2
		if width < minFrac {
			return
		}
		delta := n.b - n.a
		info := fmt.Sprintf("A %.2f%% → B %.2f%% (%+.2f points)", 100*n.a, 100*n.b, 100*delta)
		frames = append(frames, svgFrame{x: x, w: width, depth: depth, name: n.name,
			fill: diffColour(delta, maxAbs), info: info, title: n.name + "\n" + info})
		cx := x
		for _, c := range n.children {
			walk(c, cx, depth+1)
			cx += (c.a + c.b) / 2
		}
	}
	walk(root, 0, 0)
	if opts.Title == "Flame graph" {
		opts.Title = "Differential flame graph (red: more in B, blue: less)"
	}
	sub := fmt.Sprintf("%s, normalised: A %s, B %s", st, formatValue(ta.Value, sampleTypeOf(a, st)), formatValue(tb.Value, sampleTypeOf(b, st)))
	return writeSVG(w, frames, opts, sub)
}

func sampleTypeOf(p *profile.Profile, st string) *profile.ValueType {
	i, _ := SampleIndex(p, st)
	return p.SampleType[i]
}

// diffColour maps a share change to white..red (more) or white..blue (less).
func diffColour(delta, maxAbs float64) string {
	if maxAbs == 0 || delta == 0 {
		return "rgb(245,245,245)"
	}
	t := math.Min(math.Abs(delta)/maxAbs, 1)
	fade := 245 - int(t*190)
	if delta > 0 {
		return fmt.Sprintf("rgb(245,%d,%d)", fade, fade)
	}
	return fmt.Sprintf("rgb(%d,%d,245)", fade, fade)
}

// WriteDiffFolded writes "stack valueA valueB" lines (the format of
// FlameGraph's difffolded.pl, which flamegraph.pl renders as a diff).
func WriteDiffFolded(w io.Writer, a, b *profile.Profile, sampleType string) error {
	var fa, fb strings.Builder
	if err := WriteFolded(&fa, a, sampleType); err != nil {
		return fmt.Errorf("profile A: %w", err)
	}
	if err := WriteFolded(&fb, b, sampleType); err != nil {
		return fmt.Errorf("profile B: %w", err)
	}
	type pair struct{ a, b string }
	m := map[string]*pair{}
	parse := func(s string, setA bool) {
		for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				continue
			}
			p := m[line[:i]]
			if p == nil {
				p = &pair{"0", "0"}
				m[line[:i]] = p
			}
			if setA {
				p.a = line[i+1:]
			} else {
				p.b = line[i+1:]
			}
		}
	}
	parse(fa.String(), true)
	parse(fb.String(), false)
	stacks := make([]string, 0, len(m))
	for k := range m {
		stacks = append(stacks, k)
	}
	sort.Strings(stacks)
	for _, k := range stacks {
		if _, err := fmt.Fprintf(w, "%s %s %s\n", k, m[k].a, m[k].b); err != nil {
			return err
		}
	}
	return nil
}
