package bpf

import (
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
)

// requireBPF skips where the machine truly cannot load BPF (not root, or
// no kernel BTF).
func requireBPF(t testing.TB) {
	t.Helper()
	testenv.RequireBPF(t, "loading BPF programs needs root (CAP_BPF + CAP_PERFMON); run the tests as root")
}

var allTiers = []Tier{TierBTF, TierRaw, TierTracepoint}

func TestSignalProbesLoadOnEveryTier(t *testing.T) {
	requireBPF(t)
	for _, tier := range allTiers {
		t.Run(tier.String(), func(t *testing.T) {
			r := mustOpen(t, OpenRunqlat, RunqlatOptions{Tier: tier})
			b := mustOpen(t, OpenBlkio, BlkioOptions{Tier: tier})
			s := mustOpen(t, OpenSyscalls, SyscallsOptions{Tier: tier})
			c := mustOpen(t, OpenTCPStat, TCPStatOptions{Tier: tier})
			for _, got := range []Tier{r.Tier(), b.Tier(), s.Tier(), c.Tier()} {
				if got != tier {
					t.Fatalf("forced %v, attached %v", tier, got)
				}
			}
		})
	}
	a, err := OpenAccept(AcceptOptions{})
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	a.Close()
}
