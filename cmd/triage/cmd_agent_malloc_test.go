package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/internal/bench/agentproc"
	"github.com/triage-agent/triage/internal/testenv"
)

func TestArenaLimitExec(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root"}
	if got := arenaLimitExec(2, base); !slices.Equal(got, append(slices.Clone(base), "MALLOC_ARENA_MAX=2")) {
		t.Errorf("unset: %q, want the environment plus MALLOC_ARENA_MAX=2", got)
	}
	for _, env := range [][]string{
		append(slices.Clone(base), "MALLOC_ARENA_MAX=8"),                                // the operator's value
		append(slices.Clone(base), "MALLOC_ARENA_MAX="),                                 // set, even if empty
		append(slices.Clone(base), "GLIBC_TUNABLES=glibc.malloc.arena_max=4:glibc.x=1"), // the tunable
	} {
		if got := arenaLimitExec(2, env); got != nil {
			t.Errorf("%q: re-exec with %q, want none (the operator's setting wins, and an exec'd agent never loops)", env, got)
		}
	}
	if got := arenaLimitExec(0, base); got != nil {
		t.Errorf("--malloc-arenas 0: re-exec with %q, want none (glibc's default)", got)
	}
}

// `triage agent` runs with at most agent.DefaultMallocArenas arenas: it
// re-executes itself with MALLOC_ARENA_MAX (same PID), and the C heap's
// arena count on /metrics stays within it. Without the re-exec every Go
// thread has an arena of its own from the start (5 and more here), so the
// count fails this test.
func TestAgentStartsWithArenaLimit(t *testing.T) {
	bin := testenv.BuildTriage(t)
	for _, tc := range []struct {
		env  string // MALLOC_ARENA_MAX in the environment; "" = unset
		want int
	}{{"", agent.DefaultMallocArenas}, {"3", 3}} {
		t.Run("MALLOC_ARENA_MAX="+tc.env, func(t *testing.T) {
			if tc.env == "" {
				t.Setenv("MALLOC_ARENA_MAX", "") // restored after the test
				os.Unsetenv("MALLOC_ARENA_MAX")
			} else {
				t.Setenv("MALLOC_ARENA_MAX", tc.env)
			}
			p, err := agentproc.Start(context.Background(), agentproc.Config{Bin: bin, Dir: t.TempDir(), NoEBPF: true})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, kv := range bytes.Split(environ, []byte{0}) {
				if strings.HasPrefix(string(kv), "MALLOC_ARENA_MAX=") {
					got = append(got, string(kv))
				}
			}
			if want := fmt.Sprintf("MALLOC_ARENA_MAX=%d", tc.want); !slices.Equal(got, []string{want}) {
				t.Errorf("agent %d runs with %q, want [%s]", p.PID, got, want)
			}
			arenas, ok := p.Scrape()["triage_c_heap_arenas"]
			if !ok || arenas < 1 || arenas > float64(tc.want) {
				t.Errorf("triage_c_heap_arenas = %v (present %v), want 1 to %d", arenas, ok, tc.want)
			}
		})
	}
}
