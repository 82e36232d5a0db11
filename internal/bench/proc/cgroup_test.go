package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A stale cgroup is retried for removal only where nothing but exiting
// processes is left: a live process means the cgroup is in use, and it
// could be someone else's.
func TestOnlyExitingSeesLiveAndDeadProcesses(t *testing.T) {
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = zombie.Wait() }()
	// Not reaped, it turns into a zombie once it has exited.
	for deadline := time.Now().Add(5 * time.Second); ProcessState(zombie.Process.Pid) != "Z"; {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never became a zombie", zombie.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, c := range []struct {
		name  string
		procs string
		want  bool
	}{
		{"empty", "", true},
		{"gone", "999999999\n", true},
		{"zombie", strconv.Itoa(zombie.Process.Pid) + "\n", true},
		{"live", strconv.Itoa(sleeper.Process.Pid) + "\n", false},
		{"zombie and live", strconv.Itoa(zombie.Process.Pid) + "\n" + strconv.Itoa(sleeper.Process.Pid) + "\n", false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(c.procs), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := onlyExiting(dir); got != c.want {
			t.Errorf("%s: onlyExiting = %v, want %v", c.name, got, c.want)
		}
	}
	if onlyExiting(t.TempDir()) {
		t.Error("a directory without cgroup.procs counts as exiting")
	}
}
