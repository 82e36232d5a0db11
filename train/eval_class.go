package train

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteClassMarkdown writes SLA attainment per class and policy: who was
// served and who was sacrificed. One row per class (by name), one column
// per policy in run order.
func (ev *Evaluation) WriteClassMarkdown(w io.Writer) error {
	seen := map[string]bool{}
	for _, m := range ev.Policies {
		for c := range m.PerClass {
			seen[c] = true
		}
	}
	classes := slices.Sorted(maps.Keys(seen))
	if len(classes) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SLA attainment per class, %s\n\n| class |", ev.Scenario)
	for _, n := range ev.Order {
		fmt.Fprintf(&b, " %s |", n)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" ---: |", len(ev.Order)) + "\n")
	for _, c := range classes {
		fmt.Fprintf(&b, "| %s |", c)
		for _, n := range ev.Order {
			if v, ok := ev.Policies[n].PerClass[c]; ok {
				fmt.Fprintf(&b, " %.3f |", v)
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
