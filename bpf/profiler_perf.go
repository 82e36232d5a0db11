package bpf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// attachCPUClock opens a software cpu-clock perf event on every online CPU
// (hardware PMU events are often absent in VMs; cpu-clock always exists) and
// attaches prog to each, with a bpf_link where the kernel has them (5.15+),
// else the PERF_EVENT_IOC_SET_BPF ioctl.
func attachCPUClock(prog *ebpf.Program, hz int) ([]link.Link, error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	var links []link.Link
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: uint64(hz),
			Bits:   unix.PerfBitFreq,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			closeLinks(links)
			return nil, fmt.Errorf("opening cpu-clock perf event on cpu %d: %w", cpu, err)
		}
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			// Older kernels: attach by ioctl; the perf fd then owns the program.
			if ierr := attachPerfIoctl(fd, prog); ierr != nil {
				unix.Close(fd)
				closeLinks(links)
				return nil, fmt.Errorf("attaching sampler on cpu %d: link: %w; ioctl: %w", cpu, err, ierr)
			}
			links = append(links, &perfFDLink{fd: fd})
			continue
		}
		links = append(links, &perfFDLink{fd: fd, Link: l})
	}
	return links, nil
}

func attachPerfIoctl(fd int, prog *ebpf.Program) error {
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		return fmt.Errorf("PERF_EVENT_IOC_SET_BPF: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		return fmt.Errorf("PERF_EVENT_IOC_ENABLE: %w", err)
	}
	return nil
}

// perfFDLink closes the perf event fd together with the BPF link (if any),
// so that Close frees both.
type perfFDLink struct {
	link.Link // nil when attached by ioctl
	fd        int
}

func (l *perfFDLink) Close() error {
	var err error
	if l.Link != nil {
		err = l.Link.Close()
	}
	return errors.Join(err, unix.Close(l.fd))
}

func closeLinks(ls []link.Link) {
	for _, l := range ls {
		l.Close()
	}
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("reading online cpus: %w", err)
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("parsing cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return nil, fmt.Errorf("parsing cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("parsing cpu list %q: empty", s)
	}
	return cpus, nil
}
