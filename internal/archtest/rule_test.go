package archtest

import (
	"slices"
	"strings"
	"testing"
)

// testGraph builds a graph from path -> imports. A path whose first element
// has no dot is standard library, as in the toolchain.
func testGraph(edges map[string][]string) Graph {
	g := Graph{}
	add := func(path string) {
		if _, ok := g[path]; !ok {
			first, _, _ := strings.Cut(path, "/")
			g[path] = Package{ImportPath: path, Standard: !strings.Contains(first, ".")}
		}
	}
	for path, imports := range edges {
		add(path)
		for _, imp := range imports {
			add(imp)
		}
	}
	for path, imports := range edges {
		p := g[path]
		p.Imports = imports
		g[path] = p
	}
	return g
}

const m = Module + "/"

// cleanEdges is a small graph that keeps every rule of DesignRules.
func cleanEdges() map[string][]string {
	return map[string][]string{
		m + "cmd/triage":              {m + "agent", m + "internal/bench/decide", m + "train", "fmt"},
		m + "internal/bench/decide":   {m + "agent/serve", m + "client"},
		m + "agent":                   {m + "agent/serve", m + "bpf", m + "flamegraph", m + "policy", m + "experience"},
		m + "agent/serve":             {m + "wire", "github.com/quic-go/quic-go", "net"},
		m + "bpf":                     {"github.com/cilium/ebpf/link", "golang.org/x/sys/unix"},
		m + "codec":                   {"github.com/cespare/xxhash/v2", "github.com/klauspost/compress/zstd", "errors"},
		m + "wire":                    {m + "codec", "google.golang.org/protobuf/proto"},
		m + "policy":                  {m + "policy/defaultmodel", "github.com/yalue/onnxruntime_go", "google.golang.org/protobuf/encoding/protowire"},
		m + "policy/defaultmodel":     {"embed"},
		m + "experience":              {m + "policy"},
		m + "train":                   {m + "policy", m + "experience", "math"},
		m + "flamegraph":              {"github.com/google/pprof/profile"},
		m + "client":                  {m + "wire", m + "codec", "github.com/quic-go/quic-go", "golang.org/x/net/ipv4"},
		m + "internal/testenv":        {"os"},
		"github.com/cilium/ebpf/link": {"github.com/cilium/ebpf", "golang.org/x/sys/unix"},
	}
}

func TestCleanGraphHasNoViolations(t *testing.T) {
	if v := Check(testGraph(cleanEdges()), Module, DesignRules()); len(v) != 0 {
		t.Fatalf("violations in a clean graph: %v", v)
	}
}

// TestEachRuleCatchesItsViolation adds one forbidden import at a time to the
// clean graph and expects exactly that import to be reported.
func TestEachRuleCatchesItsViolation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		from, imp string              // the edge added
		also      map[string][]string // packages replaced as well
		pkg, dep  string              // the violation expected
		chain     []string            // and its chain, when it has one
	}{
		{name: "codec imports a third-party package", from: m + "codec", imp: "github.com/golang/snappy",
			pkg: m + "codec", dep: "github.com/golang/snappy"},
		{name: "codec imports golang.org/x", from: m + "codec", imp: "golang.org/x/exp/slices",
			pkg: m + "codec", dep: "golang.org/x/exp/slices"},
		{name: "bpf imports x/net (only x/sys is named)", from: m + "bpf", imp: "golang.org/x/net/bpf",
			pkg: m + "bpf", dep: "golang.org/x/net/bpf"},
		{name: "wire imports policy", from: m + "wire", imp: m + "policy",
			pkg: m + "wire", dep: m + "policy"},
		{name: "train imports agent", from: m + "train", imp: m + "agent",
			pkg: m + "train", dep: m + "agent", chain: []string{m + "train", m + "agent"}},
		{name: "flamegraph reaches agent through a helper", from: m + "flamegraph", imp: m + "internal/testenv",
			also: map[string][]string{m + "internal/testenv": {m + "agent/serve"}},
			pkg:  m + "flamegraph", dep: m + "agent/serve",
			chain: []string{m + "flamegraph", m + "internal/testenv", m + "agent/serve"}},
		{name: "agent imports client", from: m + "agent/serve", imp: m + "client",
			pkg: m + "agent/serve", dep: m + "client"},
		{name: "agent reaches train", from: m + "agent", imp: m + "train",
			pkg: m + "agent", dep: m + "train"},
		{name: "bench imports cmd", from: m + "internal/bench/decide", imp: m + "cmd/triage",
			pkg: m + "internal/bench/decide", dep: m + "cmd/triage"},
		{name: "deploy imports Go code", from: m + "deploy", imp: "k8s.io/api/apps/v1",
			pkg: m + "deploy", dep: "k8s.io/api/apps/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edges := cleanEdges()
			edges[tc.from] = append(slices.Clone(edges[tc.from]), tc.imp)
			for path, imports := range tc.also {
				edges[path] = imports
			}
			got := Check(testGraph(edges), Module, DesignRules())
			if !slices.ContainsFunc(got, func(v Violation) bool {
				return v.Pkg == tc.pkg && v.Import == tc.dep && (tc.chain == nil || slices.Equal(v.Chain, tc.chain))
			}) {
				t.Fatalf("no violation %s -> %s (chain %v); got %v", tc.pkg, tc.dep, tc.chain, got)
			}
		})
	}
}

func TestViolationNamesTheChain(t *testing.T) {
	edges := cleanEdges()
	edges[m+"flamegraph"] = append(edges[m+"flamegraph"], m+"internal/testenv")
	edges[m+"internal/testenv"] = []string{m + "agent/serve"}
	got := Check(testGraph(edges), Module, DesignRules())
	want := "flamegraph depends on agent/serve (flamegraph -> internal/testenv -> agent/serve): "
	var msgs []string
	for _, v := range got {
		msgs = append(msgs, v.String())
	}
	for _, s := range msgs {
		if strings.HasPrefix(s, want) {
			return
		}
	}
	t.Fatalf("no message starting %q in %q", want, msgs)
}

func TestDecodeGraphReadsGoListStream(t *testing.T) {
	in := `{"ImportPath":"errors","Standard":true}
{"ImportPath":"` + m + `codec","Imports":["errors","github.com/cespare/xxhash/v2"]}`
	g, err := decodeGraph(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !g.isStd("errors") || g.isStd(m+"codec") || !slices.Equal(g[m+"codec"].Imports, []string{"errors", "github.com/cespare/xxhash/v2"}) {
		t.Fatalf("graph %+v", g)
	}
	if _, err := decodeGraph(strings.NewReader(`{"ImportPath":`)); err == nil {
		t.Fatal("truncated go list output decoded without error")
	}
}
