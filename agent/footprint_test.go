package agent

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// The stack-copy ring holds about half a second of full-size samples of
// every CPU, as a power of two between 256 KiB and 4 MiB.
func TestCopyRingBytes(t *testing.T) {
	for _, c := range []struct {
		cpus int
		want uint32
	}{
		{0, 256 << 10}, {1, 256 << 10}, // 152 KiB of samples
		{2, 512 << 10}, // 311 KiB
		{8, 2 << 20},   // 1.2 MiB
		{16, 4 << 20},  // 2.4 MiB
		{256, 4 << 20}, // capped
	} {
		got := copyRingBytes(c.cpus)
		if got != c.want {
			t.Errorf("%d CPUs: %d bytes, want %d", c.cpus, got, c.want)
		}
		if got&(got-1) != 0 {
			t.Errorf("%d CPUs: %d is not a power of two", c.cpus, got)
		}
	}
}

// The agent's Go memory limit is set unless the environment names one.
func TestApplyGoMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	if v, set := os.LookupEnv("GOMEMLIMIT"); set {
		t.Cleanup(func() { os.Setenv("GOMEMLIMIT", v) })
	}
	os.Unsetenv("GOMEMLIMIT")
	if got := applyGoMemoryLimit(40 << 20); got != 40<<20 || debug.SetMemoryLimit(-1) != 40<<20 {
		t.Fatalf("limit %d in force after asking 40 MiB (returned %d)", debug.SetMemoryLimit(-1), got)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := applyGoMemoryLimit(8 << 20); got != 40<<20 || debug.SetMemoryLimit(-1) != 40<<20 {
		t.Fatalf("GOMEMLIMIT set: the agent changed the limit to %d (returned %d)", debug.SetMemoryLimit(-1), got)
	}
}

func TestApplyMaxProcs(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
	if v, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Cleanup(func() { os.Setenv("GOMAXPROCS", v) })
	}
	os.Unsetenv("GOMAXPROCS")
	if got := applyMaxProcs(1); got != 1 || runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("GOMAXPROCS %d in force after asking 1 (returned %d)", runtime.GOMAXPROCS(0), got)
	}
	runtime.GOMAXPROCS(3)
	t.Setenv("GOMAXPROCS", "3")
	if got := applyMaxProcs(1); got != 3 || runtime.GOMAXPROCS(0) != 3 {
		t.Fatalf("GOMAXPROCS set in the environment: the agent changed it to %d (returned %d)", runtime.GOMAXPROCS(0), got)
	}
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	if got := applyMaxProcs(0); got != 3 {
		t.Fatalf("0 changed GOMAXPROCS to %d", got)
	}
}

// The operator's MALLOC_MMAP_THRESHOLD_ (or glibc tunable) wins over the
// agent's; without either the agent fixes its own.
func TestMallocMmapThresholdLeavesTheEnvironmentsOwn(t *testing.T) {
	t.Setenv("MALLOC_MMAP_THRESHOLD_", "131072")
	if set, err := applyMallocMmapThreshold(DefaultMallocMmapThreshold); set || err != nil {
		t.Errorf("with MALLOC_MMAP_THRESHOLD_ set: set %v, err %v; want the environment's to stand", set, err)
	}
	os.Unsetenv("MALLOC_MMAP_THRESHOLD_")
	t.Setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=131072")
	if set, err := applyMallocMmapThreshold(DefaultMallocMmapThreshold); set || err != nil {
		t.Errorf("with the tunable set: set %v, err %v; want the environment's to stand", set, err)
	}
	t.Setenv("GLIBC_TUNABLES", "")
	if set, err := applyMallocMmapThreshold(DefaultMallocMmapThreshold); !set || err != nil {
		t.Errorf("no setting in the environment: set %v, err %v; want the agent's threshold", set, err)
	}
}
