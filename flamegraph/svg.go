package flamegraph

import (
	"bufio"
	_ "embed"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"math"
	"strings"

	"github.com/google/pprof/profile"
)

//go:embed svg_script.js
var svgScript string

// SVGOptions configures WriteSVG; the zero value means defaults.
type SVGOptions struct {
	Title      string // default "Flame graph"
	SampleType string // default: the profile's default sample type
	Width      int    // pixels, default 1200
	// MinWidth drops frames narrower than this many pixels (default 0.1):
	// they cannot be seen or clicked and would only bloat the file.
	MinWidth float64
}

func (o SVGOptions) withDefaults() SVGOptions {
	if o.Title == "" {
		o.Title = "Flame graph"
	}
	if o.Width <= 0 {
		o.Width = 1200
	}
	if o.MinWidth <= 0 {
		o.MinWidth = 0.1
	}
	return o
}

const (
	frameHeight = 16
	svgPad      = 10
	headerH     = 58
	footerH     = 26
)

// svgFrame is one laid-out rectangle.
type svgFrame struct {
	x, w  float64 // fractions of the root width
	depth int
	name  string
	fill  string
	info  string // counts and percent, for the tooltip and the details line
	title string
}

// WriteSVG renders an interactive flame graph of one sample type.
func WriteSVG(w io.Writer, p *profile.Profile, opts SVGOptions) error {
	opts = opts.withDefaults()
	root, err := BuildTree(p, opts.SampleType)
	if err != nil {
		return err
	}
	vi, _ := SampleIndex(p, opts.SampleType)
	unit := p.SampleType[vi]
	total := float64(root.Value)
	var frames []svgFrame
	minFrac := opts.MinWidth / float64(opts.Width-2*svgPad)
	var walk func(n *Node, x float64, depth int)
	walk = func(n *Node, x float64, depth int) {
		frac := float64(n.Value) / total
		if frac < minFrac {
			return
		}
		info := fmt.Sprintf("%s, %.2f%%", formatValue(n.Value, unit), 100*frac)
		fill := moduleColour(n.Module, n.Kernel)
		if depth == 0 {
			fill = "rgb(220,220,220)"
		}
		frames = append(frames, svgFrame{x: x, w: frac, depth: depth, name: n.Name, fill: fill, info: info,
			title: fmt.Sprintf("%s [%s]\n%s", n.Name, n.Module, info)})
		cx := x
		for _, c := range n.Children {
			walk(c, cx, depth+1)
			cx += float64(c.Value) / total
		}
	}
	walk(root, 0, 0)
	sub := fmt.Sprintf("%s: %s total", unit.Type, formatValue(root.Value, unit))
	return writeSVG(w, frames, opts, sub)
}

// formatValue prints a value in its unit: counts as samples, nanoseconds as
// the largest readable unit.
func formatValue(v int64, vt *profile.ValueType) string {
	switch vt.Unit {
	case "nanoseconds":
		d := float64(v)
		switch {
		case d >= 1e9:
			return fmt.Sprintf("%.2f s", d/1e9)
		case d >= 1e6:
			return fmt.Sprintf("%.2f ms", d/1e6)
		default:
			return fmt.Sprintf("%.1f µs", d/1e3)
		}
	case "count":
		if v == 1 {
			return "1 sample"
		}
		return fmt.Sprintf("%d samples", v)
	}
	return fmt.Sprintf("%d %s", v, vt.Unit)
}

// moduleColour hashes the module name into the warm flame palette, so every
// frame of one Go package / library gets the same colour in every graph;
// kernel frames are in a separate (orange-brown) band so they stand out.
func moduleColour(module string, kernel bool) string {
	h := fnv.New32a()
	h.Write([]byte(module))
	v := h.Sum32()
	a := float64(v&0xff) / 255
	b := float64((v>>8)&0xff) / 255
	if kernel {
		return fmt.Sprintf("rgb(%d,%d,%d)", 200+int(35*a), 110+int(50*b), 40)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+int(50*a), 80+int(150*b), int(55*a*b))
}

func writeSVG(out io.Writer, frames []svgFrame, opts SVGOptions, subtitle string) error {
	maxDepth := 0
	for _, f := range frames {
		maxDepth = max(maxDepth, f.depth)
	}
	width := opts.Width
	height := headerH + (maxDepth+1)*frameHeight + footerH
	fw := float64(width - 2*svgPad)
	w := bufio.NewWriter(out)
	esc := html.EscapeString
	fmt.Fprintf(w, `<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg" data-zoomed="" data-matched="">
<style>
text { font-family: monospace; font-size: 11px; fill: rgb(0,0,0); }
g.f { cursor: pointer; }
g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }
g.anc rect { opacity: 0.55; }
#title { font-size: 17px; font-family: sans-serif; }
#reset { cursor: pointer; }
input { font: 12px monospace; width: 220px; }
</style>
<rect x="0" y="0" width="%d" height="%d" fill="rgb(250,250,245)"/>
<text id="title" x="%d" y="22" text-anchor="middle">%s</text>
<text id="subtitle" x="%d" y="40" text-anchor="middle">%s</text>
<text id="reset" x="%d" y="22" style="opacity:0.3">Reset zoom</text>
<foreignObject x="%d" y="8" width="240" height="26"><input xmlns="http://www.w3.org/1999/xhtml" id="search" type="search" placeholder="search (regexp)" spellcheck="false"/></foreignObject>
<text id="matched" x="%d" y="%d" text-anchor="end"> </text>
<text id="details" x="%d" y="%d"> </text>
`, width, height, width, height, width, height, width/2, esc(opts.Title), width/2, esc(subtitle),
		svgPad, width-250, width-svgPad, height-8, svgPad, height-8)
	for _, f := range frames {
		y := headerH + (maxDepth-f.depth)*frameHeight
		px := float64(svgPad) + f.x*fw
		pw := f.w * fw
		fmt.Fprintf(w, `<g class="f" data-x="%s" data-w="%s" data-d="%d" data-n="%s" data-c="%s" data-i="%s"><title>%s</title>`+
			`<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" rx="2"/><text x="%.2f" y="%d">%s</text></g>
`, fracString(f.x), fracString(f.w), f.depth, esc(f.name), f.fill, esc(f.info), esc(f.title),
			px, y, pw, frameHeight-1, f.fill, px+3, y+frameHeight-4, esc(fitText(f.name, pw)))
	}
	fmt.Fprintf(w, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n", strings.ReplaceAll(svgScript, "]]>", "]] >"))
	return w.Flush()
}

// fracString prints a layout fraction with enough digits for any zoom depth
// a person will click, without float noise in golden files.
func fracString(v float64) string {
	if v == 0 {
		return "0"
	}
	s := fmt.Sprintf("%.9f", math.Min(v, 1))
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func fitText(name string, px float64) string {
	n := int((px - 6) / 6.6)
	if n < 3 {
		return ""
	}
	r := []rune(name)
	if len(r) <= n {
		return name
	}
	return string(r[:n-2]) + ".."
}
