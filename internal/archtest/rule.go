package archtest

import (
	"fmt"
	"slices"
	"strings"
)

// Rule is one import rule of DESIGN.md. Paths are full import paths.
type Rule interface {
	check(g Graph, module string) []Violation
}

// Only says the packages under Pkg import nothing but the standard library,
// their own subtree and the packages under Allow.
type Only struct {
	Pkg    string
	Allow  []string
	Design string // the rule in DESIGN's words, for the failure message
}

// Never says no package of the module under From (every one when From is
// empty), other than those under Except, depends on a package under To,
// directly or through others. Packages under To itself are not checked: a
// folder may use its own subtree.
type Never struct {
	From   []string
	Except []string
	To     string
	Design string
}

// Violation is one import that breaks a rule.
type Violation struct {
	Pkg    string
	Import string   // the forbidden package
	Chain  []string // for an indirect dependency, the imports that lead to it
	Design string
}

// String names the module's packages by their folder, for short messages.
func (v Violation) String() string {
	short := func(p string) string { return strings.TrimPrefix(p, Module+"/") }
	if len(v.Chain) > 2 {
		chain := make([]string, len(v.Chain))
		for i, p := range v.Chain {
			chain[i] = short(p)
		}
		return fmt.Sprintf("%s depends on %s (%s): %s", short(v.Pkg), short(v.Import), strings.Join(chain, " -> "), v.Design)
	}
	return fmt.Sprintf("%s imports %s: %s", short(v.Pkg), short(v.Import), v.Design)
}

// Check applies rules to the packages of module in g and returns every
// violation, sorted by package.
func Check(g Graph, module string, rules []Rule) []Violation {
	var out []Violation
	for _, r := range rules {
		out = append(out, r.check(g, module)...)
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return strings.Compare(a.Pkg, b.Pkg) })
	return out
}

func (r Only) check(g Graph, module string) []Violation {
	var out []Violation
	for _, p := range modulePackages(g, module) {
		if !under(p, r.Pkg) {
			continue
		}
		for _, imp := range g[p].Imports {
			if g.isStd(imp) || under(imp, r.Pkg) || underAny(imp, r.Allow) {
				continue
			}
			out = append(out, Violation{Pkg: p, Import: imp, Design: r.Design})
		}
	}
	return out
}

func (r Never) check(g Graph, module string) []Violation {
	var out []Violation
	for _, p := range modulePackages(g, module) {
		if (len(r.From) > 0 && !underAny(p, r.From)) || underAny(p, r.Except) || under(p, r.To) {
			continue
		}
		chain := g.importChain(p, func(dep string) bool { return under(dep, r.To) })
		if chain != nil {
			out = append(out, Violation{Pkg: p, Import: chain[len(chain)-1], Chain: chain, Design: r.Design})
		}
	}
	return out
}

// modulePackages lists the packages of module in g, sorted.
func modulePackages(g Graph, module string) []string {
	var out []string
	for path := range g {
		if under(path, module) {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}
