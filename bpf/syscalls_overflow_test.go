package bpf

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// notATask is the first id no task can have: the kernel's tgids and tids
// stay below PID_MAX_LIMIT (2^22), so watching or stamping ids from here
// up times nothing real.
const notATask = 1 << 22

// The bounds are the maps' real sizes, and one process or cgroup more than
// a watch map holds is ErrSyscallWatchFull, not an anonymous kernel error;
// watching one already watched is not a new entry.
func TestSyscallWatchMapsFull(t *testing.T) {
	spec, err := loadSyscalls()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"syscalls_pids": MaxSyscallWatchedPIDs, "syscalls_cgroups": MaxSyscallWatchedCgroups, "syscalls_start": MaxSyscallsInFlight} {
		if got := spec.Maps[name].MaxEntries; int(got) != want {
			t.Errorf("%s holds %d entries, the Go constant says %d", name, got, want)
		}
	}
	requireBPF(t)
	s := mustOpen(t, OpenSyscalls, SyscallsOptions{})
	// Cgroup ids need not name live cgroups: the map is keyed by number.
	fillWatchMap(t, s.WatchCgroup, MaxSyscallWatchedCgroups, "cgroup")
	if err := s.WatchCgroup(notATask + 1); err != nil {
		t.Errorf("watching a cgroup already watched, with the map full: %v", err)
	}
	fillWatchMap(t, s.WatchPID, MaxSyscallWatchedPIDs, "pid")
	// Room again after one leaves.
	if err := s.UnwatchPID(notATask + 1); err != nil {
		t.Fatal(err)
	}
	if err := s.WatchPID(notATask + MaxSyscallWatchedPIDs + 1); err != nil {
		t.Fatalf("watching after one left: %v", err)
	}
}

// fillWatchMap watches the ids notATask+1 to notATask+held, which must
// all fit, and then one more, which must be ErrSyscallWatchFull.
func fillWatchMap[K uint32 | uint64](t *testing.T, watch func(K) error, held K, kind string) {
	t.Helper()
	for n := K(1); n <= held; n++ {
		if err := watch(notATask + n); err != nil {
			t.Fatalf("watching %s %d of %d: %v", kind, n, held, err)
		}
	}
	if err := watch(notATask + held + 1); !errors.Is(err, ErrSyscallWatchFull) {
		t.Fatalf("watching %s %d: %v, want ErrSyscallWatchFull", kind, held+1, err)
	}
}

// With the in-flight map full (stamps of threads that no longer return,
// as threads that end inside exit leave), a watched process's syscalls
// are not timed and each is counted by Untimed; once there is room they
// are timed again and the count stops.
func TestSyscallsUntimedWhenInFlightMapFull(t *testing.T) {
	requireBPF(t)
	s := mustOpen(t, OpenSyscalls, SyscallsOptions{})
	start := s.mapNamed("syscalls_start")
	for tid := uint32(0); tid < MaxSyscallsInFlight; tid++ {
		if err := start.Put(notATask+tid, uint64(1)); err != nil {
			t.Fatalf("filling the in-flight map, entry %d: %v", tid, err)
		}
	}
	if n, err := s.Untimed(); err != nil || n != 0 {
		t.Fatalf("untimed before any watch: %d, %v", n, err)
	}
	if err := s.WatchPID(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	const calls = 1000
	syscalls := func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range calls {
			unix.Getppid()
		}
	}
	syscalls()
	var h Hist
	if err := s.Read(&h); err != nil {
		t.Fatal(err)
	}
	full, err := s.Untimed()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("in-flight map full: %d syscalls untimed, %d timed", full, h.Count())
	if full < calls {
		t.Errorf("%d syscalls untimed, want at least the %d getppid calls", full, calls)
	}
	if h.Count() != 0 {
		t.Errorf("%d syscalls timed with the in-flight map full", h.Count())
	}

	for tid := uint32(0); tid < MaxSyscallsInFlight; tid++ {
		if err := start.Delete(notATask + tid); err != nil {
			t.Fatalf("emptying the in-flight map, entry %d: %v", tid, err)
		}
	}
	before, err := s.Untimed()
	if err != nil {
		t.Fatal(err)
	}
	syscalls()
	after, err := s.Untimed()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Read(&h); err != nil {
		t.Fatal(err)
	}
	if after != before || h.Count() < calls {
		t.Errorf("with room again: untimed went %d -> %d, %d syscalls timed (want no change, at least %d)", before, after, h.Count(), calls)
	}
}

// A watched thread that ends inside a syscall (exit_group here: every
// process's last) never reaches sys_exit; its stamp must not stay in the
// in-flight map, or such exits fill it and timing stops for good.
func TestSyscallsExitedThreadsLeaveNoStamp(t *testing.T) {
	requireBPF(t)
	for _, tier := range allTiers {
		t.Run(tier.String(), func(t *testing.T) {
			s := mustOpen(t, OpenSyscalls, SyscallsOptions{Tier: tier})
			if err := s.WatchAll(true); err != nil {
				t.Fatal(err)
			}
			const children = 20
			var pids []uint32
			for range children {
				c := exec.Command("/bin/true")
				if err := c.Run(); err != nil {
					t.Fatal(err)
				}
				pids = append(pids, uint32(c.Process.Pid))
			}
			if err := s.WatchAll(false); err != nil {
				t.Fatal(err)
			}
			start := s.mapNamed("syscalls_start")
			left := 0
			for _, pid := range pids {
				var stamp uint64
				if start.Lookup(pid, &stamp) == nil {
					left++
				}
			}
			var h Hist
			if err := s.Read(&h); err != nil {
				t.Fatal(err)
			}
			if h.Count() == 0 {
				t.Fatal("nothing timed while watching every task")
			}
			if left != 0 {
				t.Errorf("%d of %d exited children left a stamp in the in-flight map", left, children)
			}
		})
	}
}
