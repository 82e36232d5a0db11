package cgroup2

import (
	"reflect"
	"strings"
	"testing"
)

// Only cgroup2 lines count, by the filesystem type after " - ", in the
// table's order, with the root the mount shows (a bind mount of one cgroup
// has that cgroup's path) and where it is mounted.
func TestParseMountinfoKeepsCgroup2MountsInOrder(t *testing.T) {
	table := strings.Join([]string{
		"22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw",
		"30 22 0:26 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs ro,mode=755",
		"31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate",
		"32 30 0:28 / /sys/fs/cgroup/cpu rw,nosuid - cgroup cgroup rw,cpu",
		"40 22 0:27 /system.slice/app.service /run/app/cgroup rw - cgroup2 cgroup2 rw",
		"41 22 0:27 /short - cgroup2 cgroup2 rw",
		"",
	}, "\n")
	want := []Mount{
		{Root: "/", Point: "/sys/fs/cgroup/unified"},
		{Root: "/system.slice/app.service", Point: "/run/app/cgroup"},
	}
	if got := parseMountinfo(strings.NewReader(table)); !reflect.DeepEqual(got, want) {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
}

// This process's own table reads.
func TestMountsReadsThisProcess(t *testing.T) {
	mounts, err := Mounts()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if m.Root == "" || m.Point == "" {
			t.Errorf("mount with an empty field: %+v", m)
		}
	}
}
