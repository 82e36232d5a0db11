package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Package is one node of the import graph: what `go list -json` says of it.
type Package struct {
	ImportPath string
	Standard   bool     // part of the standard library
	Imports    []string // direct imports of its non-test files
}

// Graph maps an import path to its package.
type Graph map[string]Package

// Load runs `go list -deps -json` on patterns in dir (any folder of the
// module) and returns every listed package and dependency.
func Load(dir string, patterns ...string) (Graph, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, patterns...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list -deps -json %s: %w: %s", strings.Join(patterns, " "), err, stderr.Bytes())
	}
	return decodeGraph(&stdout)
}

// decodeGraph reads the stream of JSON objects that `go list -json` prints.
func decodeGraph(r io.Reader) (Graph, error) {
	g := Graph{}
	dec := json.NewDecoder(r)
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return g, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		g[p.ImportPath] = p
	}
}

// isStd reports whether path is the standard library (or cgo's "C").
func (g Graph) isStd(path string) bool {
	return path == "C" || g[path].Standard
}

// under reports whether path is prefix or a package below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// underAny reports whether path is under one of prefixes.
func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(path, p) {
			return true
		}
	}
	return false
}

// importChain returns the shortest chain of direct imports from a package
// to a package it depends on that target accepts (both ends included), or
// nil when it depends on none. The walk follows Imports, so it sees exactly
// the dependencies that `go list -deps` lists.
func (g Graph) importChain(from string, target func(string) bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur != from && target(cur) {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, next := range g[cur].Imports {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return nil
}
