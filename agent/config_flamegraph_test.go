package agent

import (
	"errors"
	"testing"
)

// The flame-graph unwind mode and cache cap are checked before anything
// starts.
func TestConfigFlamegraphUnwind(t *testing.T) {
	for _, c := range []struct {
		unwind string
		cache  int
		ok     bool
	}{
		{"", 0, true}, {"auto", 0, true}, {"dwarf", 1 << 20, true}, {"fp", 0, true},
		{"frames", 0, false}, {"auto", -1, false},
	} {
		_, err := Config{ExperienceDir: "-", FlamegraphDir: "-", FlamegraphUnwind: c.unwind, FlamegraphCacheBytes: c.cache}.withDefaults()
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrBadConfig) {
			t.Errorf("unwind %q cache %d: err %v, want ok=%v", c.unwind, c.cache, err, c.ok)
		}
	}
}
