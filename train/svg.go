package train

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one line of a plot.
type Series struct {
	Label  string
	Colour string
	X, Y   []float64
}

// LinePlotSVG draws series as a self-contained SVG line plot (no scripts,
// no external fonts or styles), for the learning curve of `triage train`.
func LinePlotSVG(title, xLabel, yLabel string, series []Series) []byte {
	const W, H, left, right, top, bottom = 720.0, 420.0, 70.0, 170.0, 40.0, 50.0
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for i := range s.X {
			if !finite(s.X[i]) || !finite(s.Y[i]) {
				continue
			}
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	if !finite(xmin) {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	if ymax == ymin {
		ymax = ymin + 1
	}
	pad := (ymax - ymin) * 0.05
	ymin, ymax = ymin-pad, ymax+pad
	pw, ph := W-left-right, H-top-bottom
	px := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*pw }
	py := func(y float64) float64 { return top + ph - (y-ymin)/(ymax-ymin)*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	// Axes and a grid of five ticks each way.
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", left, top, pw, ph)
	for i := 0; i <= 5; i++ {
		fx := xmin + (xmax-xmin)*float64(i)/5
		fy := ymin + (ymax-ymin)*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`+"\n", px(fx), top, px(fx), top+ph)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(fy), left+pw, py(fy))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", px(fx), top+ph+16, fmtTick(fx))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(fy)+4, fmtTick(fy))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", left+pw/2, H-10, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.0f" text-anchor="middle" transform="rotate(-90 16 %.0f)">%s</text>`+"\n", top+ph/2, top+ph/2, html.EscapeString(yLabel))
	for si, s := range series {
		var pts []string
		for i := range s.X {
			if finite(s.X[i]) && finite(s.Y[i]) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
			}
		}
		col := s.Colour
		if col == "" {
			col = palette[si%len(palette)]
		}
		if len(pts) > 0 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
		}
		if len(pts) == 1 || len(pts) < 40 {
			for _, p := range pts {
				xy := strings.Split(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], col)
			}
		}
		ly := top + 14 + float64(si)*18
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/>`+"\n", left+pw+12, ly-4, left+pw+32, ly-4, col)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", left+pw+38, ly, html.EscapeString(s.Label))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// BarPlotSVG draws one value per policy as horizontal bars, for
// `triage eval --plot`.
func BarPlotSVG(title string, labels []string, values []float64, format string) []byte {
	const W, left, barH, gap, top = 640.0, 130.0, 22.0, 8.0, 40.0
	H := top + float64(len(labels))*(barH+gap) + 20
	vmax := 0.0
	for _, v := range values {
		if finite(v) {
			vmax = math.Max(vmax, v)
		}
	}
	if vmax == 0 {
		vmax = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, l := range labels {
		y := top + float64(i)*(barH+gap)
		v := values[i]
		if !finite(v) {
			v = 0
		}
		w := v / vmax * (W - left - 90)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%s</text>`+"\n", left-8, y+barH*0.7, html.EscapeString(l))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.1f" height="%.0f" fill="%s"><title>%s: %s</title></rect>`+"\n", left, y, w, barH, palette[i%len(palette)], html.EscapeString(l), fmt.Sprintf(format, v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f">%s</text>`+"\n", left+w+6, y+barH*0.7, fmt.Sprintf(format, v))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

func fmtTick(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
