package codec

import (
	"fmt"
	"os"
	"time"

	deltacodec "github.com/triage-agent/triage/codec"
)

// DefaultRecordFiles are the kernel counter files one snapshot
// concatenates: what a node-state push would carry, and what the codec is
// tuned for.
var DefaultRecordFiles = []string{
	"/proc/stat", "/proc/diskstats", "/proc/net/snmp", "/proc/net/netstat",
	"/proc/meminfo", "/proc/vmstat", "/proc/interrupts", "/proc/softirqs",
	"/proc/pressure/cpu", "/proc/pressure/io", "/proc/pressure/memory", "/proc/loadavg",
}

// Recording is what Record wrote.
type Recording struct {
	Snapshots, Files int
	Bytes            int64
}

// Record writes count snapshots of the given files, interval apart, as a
// frame-stream file: the realistic input of `triage bench codec`. Files
// that this kernel lacks are skipped, each reported once to skipped (when
// set) before the recording starts, so the recorder runs anywhere.
func Record(path string, files []string, count int, interval time.Duration, maxSize int, skipped func(file string, err error)) (Recording, error) {
	var rec Recording
	if count < 1 || count > 1_000_000 {
		return rec, fmt.Errorf("--count %d not in 1..1000000", count)
	}
	var present []string
	for _, f := range files {
		if _, err := os.ReadFile(f); err != nil {
			if skipped != nil {
				skipped(f, err)
			}
			continue
		}
		present = append(present, f)
	}
	if len(present) == 0 {
		return rec, fmt.Errorf("none of the %d files is readable", len(files))
	}
	out, err := os.Create(path)
	if err != nil {
		return rec, fmt.Errorf("creating %s: %w", path, err)
	}
	var snap, frame []byte
	next := time.Now()
	for i := 0; i < count; i++ {
		if i > 0 {
			next = next.Add(interval)
			time.Sleep(time.Until(next))
		}
		snap = snap[:0]
		for _, f := range present {
			b, err := os.ReadFile(f)
			if err != nil {
				out.Close()
				return rec, fmt.Errorf("snapshot %d: %w", i, err)
			}
			snap = fmt.Appendf(snap, "==> %s <==\n", f)
			snap = append(snap, b...)
		}
		if len(snap) > maxSize {
			out.Close()
			return rec, fmt.Errorf("snapshot %d is %d bytes, over --max-size %d", i, len(snap), maxSize)
		}
		frame = deltacodec.AppendRecord(frame[:0], snap)
		if _, err := out.Write(frame); err != nil {
			out.Close()
			return rec, fmt.Errorf("writing %s: %w", path, err)
		}
		rec.Bytes += int64(len(frame))
	}
	if err := out.Close(); err != nil {
		return rec, fmt.Errorf("closing %s: %w", path, err)
	}
	rec.Snapshots, rec.Files = count, len(present)
	return rec, nil
}
