package bpf

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// blockDiskOf returns the whole-disk dev_t (kernel encoding) backing dir,
// or an error when dir is not on a block device (tmpfs, overlay...).
func blockDiskOf(dir string) (Dev, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, err
	}
	maj, min := unix.Major(st.Dev), unix.Minor(st.Dev)
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", maj, min)
	if _, err := os.Stat(sys); err != nil {
		return 0, fmt.Errorf("%s is on %d:%d, not a block device", dir, maj, min)
	}
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		b, err := os.ReadFile(filepath.Join(sys, "..", "dev"))
		if err != nil {
			return 0, err
		}
		mm := strings.SplitN(strings.TrimSpace(string(b)), ":", 2)
		a, _ := strconv.Atoi(mm[0])
		c, _ := strconv.Atoi(mm[1])
		maj, min = uint32(a), uint32(c)
	}
	return Dev(maj<<20 | min), nil
}

// blockBackedDir finds a writable directory on a real block device.
func blockBackedDir(t *testing.T) (string, Dev) {
	for _, d := range []string{t.TempDir(), "."} {
		if dev, err := blockDiskOf(d); err == nil {
			return d, dev
		}
	}
	t.Skip("neither the test temp dir nor the package dir is on a block device")
	return "", 0
}

func fsyncWrites(t *testing.T, dir string, n int) {
	f, err := os.CreateTemp(dir, "blkio-*")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < n; i++ {
		buf[0] = byte(i)
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBlkioSeesFsyncedWrites(t *testing.T) {
	requireBPF(t)
	dir, disk := blockBackedDir(t)
	for _, tier := range allTiers {
		t.Run(tier.String(), func(t *testing.T) {
			b := mustOpen(t, OpenBlkio, BlkioOptions{Tier: tier})
			read := func() Hist {
				var h Hist
				if err := b.ReadDevices(func(d Dev, x *Hist) {
					if d == disk {
						h = *x
					}
				}); err != nil {
					t.Fatal(err)
				}
				return h
			}
			before := read()
			const writes = 30
			fsyncWrites(t, dir, writes)
			after := read()
			var d Hist
			d.Sub(&after, &before)
			t.Logf("disk %v: %d requests, p50 %.0f µs p99 %.0f µs", disk, d.Count(), d.Quantile(0.5)/1e3, d.Quantile(0.99)/1e3)
			if d.Count() < writes {
				t.Fatalf("disk %v saw %d completed requests for %d fsync'd writes", disk, d.Count(), writes)
			}
			if p := d.Quantile(0.5); p < 1e3 || p > 1e9 {
				t.Errorf("block p50 %.0f ns is not a plausible device latency", p)
			}
		})
	}
}
