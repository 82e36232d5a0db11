package flamegraph

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// WriteFolded writes one line per distinct stack, "root;...;leaf value",
// sorted, as Brendan Gregg's stackcollapse tools emit and FlameGraph and
// speedscope read. Kernel frames carry the conventional "_[k]" suffix; ';'
// inside a name is replaced by ':' so it cannot split a frame.
func WriteFolded(w io.Writer, p *profile.Profile, sampleType string) error {
	vi, err := SampleIndex(p, sampleType)
	if err != nil {
		return err
	}
	agg := map[string]int64{}
	var names []string
	for _, s := range p.Sample {
		if vi >= len(s.Value) || s.Value[vi] <= 0 {
			continue
		}
		names = names[:0]
		for _, f := range stackOf(s) {
			n := strings.NewReplacer(";", ":", "\n", " ").Replace(f.name)
			if f.kernel {
				n += "_[k]"
			}
			names = append(names, n)
		}
		agg[strings.Join(names, ";")] += s.Value[vi]
	}
	keys := make([]string, 0, len(agg))
	for k := range agg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		fmt.Fprintf(bw, "%s %d\n", k, agg[k])
	}
	return bw.Flush()
}
