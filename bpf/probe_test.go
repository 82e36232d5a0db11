package bpf

import (
	"errors"
	"testing"
)

func TestParseTierRoundTrip(t *testing.T) {
	for _, tier := range []Tier{TierAuto, TierBTF, TierRaw, TierTracepoint} {
		got, err := ParseTier(tier.String())
		if err != nil || got != tier {
			t.Errorf("ParseTier(%q) = %v, %v", tier.String(), got, err)
		}
	}
	if _, err := ParseTier("fentry"); !errors.Is(err, ErrBadTier) {
		t.Errorf("ParseTier(fentry) error %v, want ErrBadTier", err)
	}
}

func TestPruneSpecKeepsOnlyTheTiersMaps(t *testing.T) {
	spec, err := loadRunqlat()
	if err != nil {
		t.Fatal(err)
	}
	pruneSpec(spec, []string{"runqlat_tp_wakeup", "runqlat_tp_wakeup_new", "runqlat_tp_switch"})
	if len(spec.Programs) != 3 {
		t.Fatalf("%d programs kept, want 3", len(spec.Programs))
	}
	if _, ok := spec.Maps["runqlat_task_ts"]; ok {
		t.Error("the tracepoint tier kept the task-storage map (needs BTF)")
	}
	if _, ok := spec.Maps["runqlat_pid_ts"]; !ok {
		t.Error("the tracepoint tier lost its pid map")
	}
}

func TestForcingAMissingTierFails(t *testing.T) {
	if _, err := OpenRunqlat(RunqlatOptions{Tier: TierIter}); !errors.Is(err, ErrBadTier) {
		t.Fatalf("runqlat on the iter tier: %v, want ErrBadTier", err)
	}
}
