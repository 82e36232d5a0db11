package tracefs

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// With tracefs unmounted, as on a freshly booted VM, Mount makes the
// tracepoints' events directory findable again. The test runs in a mount
// namespace of its own (on a thread it locks and never returns), so the
// unmount is not seen by the tests of other packages running beside it.
func TestMountMakesTheEventsFindable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a mount namespace and mounting tracefs need root")
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		errc <- mountInANamespaceWithoutTracefs()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// mountInANamespaceWithoutTracefs unshares the calling thread's mount
// namespace, unmounts tracefs there, calls Mount, and says whether the
// events directory is then found.
func mountInANamespaceWithoutTracefs() error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	if err := unix.Unmount("/sys/kernel/tracing", unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return err
	}
	if _, err := os.Stat("/sys/kernel/tracing/events"); err == nil {
		return errors.New("tracefs still mounted after the unmount")
	}
	if err := Mount(); err != nil {
		return err
	}
	if _, err := os.Stat("/sys/kernel/tracing/events"); err != nil {
		if _, derr := os.Stat("/sys/kernel/debug/tracing/events"); derr != nil {
			return errors.Join(errors.New("after Mount no events directory"), err, derr)
		}
	}
	return nil
}
