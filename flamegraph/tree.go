package flamegraph

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Node is one frame of a flame graph: the sum of the samples whose stack
// passes through this path from the root.
type Node struct {
	Name     string
	Module   string // colouring key: Go package, library file name, or "kernel"
	Kernel   bool
	Value    int64
	Children []*Node // sorted by name once the tree is built
	index    map[string]*Node
}

func (n *Node) child(name, module string, kernel bool) *Node {
	key := name
	if kernel {
		key += "\x00k"
	}
	if c := n.index[key]; c != nil {
		return c
	}
	if n.index == nil {
		n.index = map[string]*Node{}
	}
	c := &Node{Name: name, Module: module, Kernel: kernel}
	n.index[key] = c
	n.Children = append(n.Children, c)
	return c
}

func (n *Node) sortChildren() {
	sort.Slice(n.Children, func(i, j int) bool {
		a, b := n.Children[i], n.Children[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return !a.Kernel && b.Kernel
	})
	for _, c := range n.Children {
		c.sortChildren()
	}
	n.index = nil
}

// SampleIndex resolves a sample type name ("" means the profile's default,
// else its last type, as pprof does).
func SampleIndex(p *profile.Profile, sampleType string) (int, error) {
	if sampleType == "" {
		sampleType = p.DefaultSampleType
	}
	if sampleType == "" {
		if len(p.SampleType) == 0 {
			return 0, ErrEmptyProfile
		}
		return len(p.SampleType) - 1, nil
	}
	for i, st := range p.SampleType {
		if st.Type == sampleType {
			return i, nil
		}
	}
	return 0, fmt.Errorf("profile has no sample type %q", sampleType)
}

// frame is one stack entry as rendered.
type frame struct {
	name, module string
	kernel       bool
}

// stackOf returns a sample's frames root first: the process name (from the
// "comm" label, when present) and then the callers down to the leaf,
// expanding inlined functions.
func stackOf(s *profile.Sample) []frame {
	var out []frame
	if c := s.Label["comm"]; len(c) > 0 && c[0] != "" {
		out = append(out, frame{name: c[0], module: "[process]"})
	}
	for i := len(s.Location) - 1; i >= 0; i-- {
		loc := s.Location[i]
		kernel := loc.Mapping != nil && loc.Mapping.File == "[kernel.kallsyms]"
		if len(loc.Line) == 0 {
			name := fmt.Sprintf("0x%x", loc.Address)
			if loc.Mapping != nil {
				name = fmt.Sprintf("%s+0x%x", filepath.Base(loc.Mapping.File), loc.Address-loc.Mapping.Start+loc.Mapping.Offset)
			}
			out = append(out, frame{name: name, module: moduleOf("", loc, kernel), kernel: kernel})
			continue
		}
		for j := len(loc.Line) - 1; j >= 0; j-- {
			name := "?"
			if fn := loc.Line[j].Function; fn != nil {
				name = fn.Name
			}
			out = append(out, frame{name: name, module: moduleOf(name, loc, kernel), kernel: kernel})
		}
	}
	return out
}

// moduleOf picks the colouring key of a frame: "kernel", the Go package of a
// Go function, else the base name of the mapped file.
func moduleOf(name string, loc *profile.Location, kernel bool) string {
	if kernel {
		return "kernel"
	}
	if pkg := goPackage(name); pkg != "" {
		return pkg
	}
	if loc.Mapping != nil && loc.Mapping.File != "" {
		return filepath.Base(loc.Mapping.File)
	}
	if i := strings.Index(name, "+0x"); i > 0 {
		return name[:i]
	}
	return "?"
}

// goPackage returns the package path of a Go symbol ("net/http" for
// "net/http.(*Server).Serve"), or "" when name does not look like Go: C
// symbols have no '.' apart from GCC clone suffixes (foo.cold, foo.isra.0).
func goPackage(name string) string {
	if strings.Contains(name, "+0x") { // module+offset of an unnamed frame
		return ""
	}
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot <= 0 {
		return ""
	}
	pkg := name[:slash+1+dot]
	rest := name[slash+2+dot:]
	if rest == "" || strings.ContainsAny(pkg, " ()[]<>+") {
		return ""
	}
	for _, suffix := range []string{"cold", "part", "isra", "constprop", "lto_priv", "localalias"} {
		if strings.HasPrefix(rest, suffix) {
			return ""
		}
	}
	return pkg
}

// BuildTree aggregates a profile into a flame graph tree for one sample type.
func BuildTree(p *profile.Profile, sampleType string) (*Node, error) {
	vi, err := SampleIndex(p, sampleType)
	if err != nil {
		return nil, err
	}
	root := &Node{Name: "all", Module: "[root]"}
	for _, s := range p.Sample {
		if vi >= len(s.Value) || s.Value[vi] <= 0 {
			continue
		}
		v := s.Value[vi]
		root.Value += v
		n := root
		for _, f := range stackOf(s) {
			n = n.child(f.name, f.module, f.kernel)
			n.Value += v
		}
	}
	if root.Value == 0 {
		return nil, ErrEmptyProfile
	}
	root.sortChildren()
	return root, nil
}
