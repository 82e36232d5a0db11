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
	ev.policyHeader(&b, "SLA attainment per class, "+ev.Scenario, "| class |", "| --- |")
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

// policyHeader starts a table with one column per policy in run order:
// its title, then the lead columns' header and rule.
func (ev *Evaluation) policyHeader(b *strings.Builder, title, lead, leadRule string) {
	fmt.Fprintf(b, "%s\n\n%s", title, lead)
	for _, n := range ev.Order {
		fmt.Fprintf(b, " %s |", n)
	}
	b.WriteString("\n" + leadRule + strings.Repeat(" ---: |", len(ev.Order)) + "\n")
}
