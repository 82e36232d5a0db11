package main

import (
	"fmt"
	"sort"
	"strings"
)

// benches maps `triage bench <what>` to its runner; each bench file registers
// itself from init. Runners print a human table and, with --json, one JSON
// object as the last line.
var benches = map[string]func(args []string) error{}

func registerBench(name string, run func(args []string) error) { benches[name] = run }

func init() {
	register("bench", "run a benchmark: "+"codec | decide | signals | e2e | ... (--json for one JSON line)", func(args []string) error {
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			names := make([]string, 0, len(benches))
			for n := range benches {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("usage: triage bench <%s> [flags]", strings.Join(names, "|"))
		}
		run, ok := benches[args[0]]
		if !ok {
			return fmt.Errorf("unknown benchmark %q", args[0])
		}
		return run(args[1:])
	})
}
