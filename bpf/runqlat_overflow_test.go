package bpf

import (
	"errors"
	"testing"
)

// MaxWatchedCgroups is the map's real size, and watching one cgroup more
// than it holds is ErrCgroupMapFull, not an anonymous kernel error; the
// cgroups already watched stay watched and readable.
func TestWatchCgroupMapFull(t *testing.T) {
	spec, err := loadRunqlat()
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Maps["runqlat_cgroup_hist"].MaxEntries; got != MaxWatchedCgroups {
		t.Fatalf("runqlat_cgroup_hist holds %d entries, MaxWatchedCgroups says %d", got, MaxWatchedCgroups)
	}
	requireBPF(t)
	r := mustOpen(t, OpenRunqlat, RunqlatOptions{})
	if r.Tier() == TierTracepoint {
		t.Skip("no per-cgroup map on the tracepoint tier")
	}
	// Ids need not name live cgroups: the map is keyed by number.
	for id := uint64(1); id <= MaxWatchedCgroups; id++ {
		if err := r.WatchCgroup(id); err != nil {
			t.Fatalf("watching cgroup %d of %d: %v", id, MaxWatchedCgroups, err)
		}
	}
	if err := r.WatchCgroup(MaxWatchedCgroups + 1); !errors.Is(err, ErrCgroupMapFull) {
		t.Fatalf("watching cgroup %d: %v, want ErrCgroupMapFull", MaxWatchedCgroups+1, err)
	}
	var h Hist
	if err := r.ReadCgroup(MaxWatchedCgroups, &h); err != nil {
		t.Fatalf("a watched cgroup after the overflow: %v", err)
	}
	// Room again after one leaves.
	if err := r.UnwatchCgroup(1); err != nil {
		t.Fatal(err)
	}
	if err := r.WatchCgroup(MaxWatchedCgroups + 1); err != nil {
		t.Fatalf("watching after one left: %v", err)
	}
}
