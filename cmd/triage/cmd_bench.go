package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// benches maps `triage bench <what>` to its runner; each bench file registers
// itself from init. Runners print a human table and, with --json, one JSON
// object as the last line.
var benches = map[string]func(args []string) error{}

func registerBench(name string, run func(args []string) error) { benches[name] = run }

// newBenchFlagSet returns the flag set of `triage bench <name>` with --json,
// the same switch in every bench: after the human table, print one JSON
// object as the last line (printJSONLine).
func newBenchFlagSet(name, summary string) (fs *flag.FlagSet, asJSON *bool) {
	fs = newFlagSet("bench "+name, summary)
	return fs, fs.Bool("json", false, "print one JSON object as the last line")
}

// printJSONLine writes v as one line of JSON: what a bench prints last with
// --json, for scripts that read the last line.
func printJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// printTableAndJSON prints a bench's table and, with --json, its JSON line
// after it.
func printTableAndJSON(res interface{ WriteTable(io.Writer) }, asJSON bool) error {
	res.WriteTable(os.Stdout)
	if asJSON {
		return printJSONLine(os.Stdout, res)
	}
	return nil
}

// printOwnJSONLine is printJSONLine for a result with a JSON shape of its
// own: the line its JSON method encodes. As fmt.Println would, it does not
// report a failed write.
func printOwnJSONLine(w io.Writer, res interface{ JSON() ([]byte, error) }) error {
	line, err := res.JSON()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(line))
	return nil
}

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
