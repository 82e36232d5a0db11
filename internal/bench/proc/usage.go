package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Self names the calling process to ReadUsage.
const Self = 0

// Usage is a process's CPU time so far and its memory now.
type Usage struct {
	CPU     time.Duration // user + system, all threads
	RSS     int64         // resident set, bytes (VmRSS)
	PeakRSS int64         // the resident set's high-water mark, bytes (VmHWM)
}

// MiB converts bytes to MiB, the unit the benchmarks print memory in.
func MiB(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// ReadUsage reads the usage of process pid, or of this process for Self.
// Memory comes from /proc/PID/status. CPU time of this process comes from
// getrusage (microseconds); of another process from /proc/PID/stat, in
// clock ticks (10 ms), which is all the kernel exports for it. Fields that
// could not be read are zero, and the error says which failed.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	var errs []error
	var err error
	if pid == Self {
		u.CPU, err = selfCPU()
	} else {
		u.CPU, err = procCPU(pid)
	}
	errs = append(errs, err)
	u.RSS, u.PeakRSS, err = procMemory(pid)
	errs = append(errs, err)
	return u, errors.Join(errs...)
}

func procPath(pid int, file string) string {
	if pid == Self {
		return "/proc/self/" + file
	}
	return fmt.Sprintf("/proc/%d/%s", pid, file)
}

func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// userHZ is the unit of /proc/PID/stat's times: USER_HZ, 100 on Linux.
const userHZ = 100

// procCPU is utime + stime, fields 14 and 15 of /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	path := procPath(pid, "stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces or parentheses itself.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no command name", path)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the command name, want 13 or more", path, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// procMemory is VmRSS and VmHWM of /proc/PID/status, in bytes.
func procMemory(pid int) (rss, peak int64, err error) {
	path := procPath(pid, "status")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "VmRSS:" && f[0] != "VmHWM:") {
			continue
		}
		kib, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return rss, peak, fmt.Errorf("%s: %s: %w", path, f[0], err)
		}
		if f[0] == "VmRSS:" {
			rss = kib << 10
		} else {
			peak = kib << 10
		}
		found++
	}
	if found < 2 {
		return rss, peak, fmt.Errorf("%s: no VmRSS or VmHWM (a kernel thread or a zombie)", path)
	}
	return rss, peak, nil
}
