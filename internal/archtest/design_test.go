package archtest

import "testing"

// TestDesignImportRules checks DESIGN.md's import table on the module's real
// package graph.
func TestDesignImportRules(t *testing.T) {
	g, err := Load(".", Module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	// The rules must govern folders that exist: a renamed folder would
	// otherwise leave its rule checking nothing.
	for _, r := range DesignRules() {
		var folder string
		switch r := r.(type) {
		case Only:
			folder = r.Pkg
		case Never:
			folder = r.To
		}
		if len(modulePackages(g, folder)) == 0 {
			t.Errorf("rule %+v names %s, which has no package", r, folder)
		}
	}
	for _, v := range Check(g, Module, DesignRules()) {
		t.Error(v)
	}
}
