package signals

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/triage-agent/triage/bpf"
)

// maxDevices bounds the per-device state (the BPF map holds 128 too).
const maxDevices = 128

// blkioSource feeds BlkioSignal from the blkio probe (one histogram per
// device plus their sum), else from /proc/diskstats, whose time-in-I/O
// over completed I/Os gives a mean per device, not a distribution.
type blkioSource struct {
	src    Source
	status ProbeStatus
	probe  *bpf.Blkio
	all    *Window
	sum    bpf.Hist
	devs   map[string]*deviceState
	order  []string
	pf     procFile
	cfg    *Config
	slow   throttle
}

type deviceState struct {
	dev, name string
	win       *Window        // eBPF
	ctr       *counterWindow // procfs: [0] ios, [1] ms
	seen      time.Time
	whole     bool
}

func newBlkioSource(cfg *Config, bpfErr error) *blkioSource {
	s := &blkioSource{status: ProbeStatus{Name: ProbeBlkio}, all: NewWindow(cfg.Window, cfg.Interval), devs: map[string]*deviceState{}, cfg: cfg, slow: throttle{every: cfg.slowInterval()}}
	probe, err := openProbe(&s.status, bpfErr, func() (*bpf.Blkio, error) { return bpf.OpenBlkio(bpf.BlkioOptions{Tier: cfg.Tier}) })
	if err != nil {
		s.src = fallbackSource(SourceProcfs, err, "mean latency per I/O from /proc/diskstats")
		return s
	}
	s.probe = probe
	s.src = Source{Kind: SourceEBPF}
	return s
}

// device returns the state of a device, creating it while under the bound.
func (s *blkioSource) device(key string, major, minor uint32, name []byte) *deviceState {
	if d, ok := s.devs[key]; ok {
		return d
	}
	if len(s.devs) >= maxDevices {
		return nil
	}
	d := &deviceState{dev: key, name: string(name)}
	_, err := os.Stat(fmt.Sprintf("/sys/dev/block/%d:%d/partition", major, minor))
	d.whole = err != nil
	if d.name == "" {
		d.name = devName(major, minor)
	}
	if s.probe != nil {
		d.win = NewWindow(s.cfg.Window, s.cfg.Interval)
	} else {
		d.ctr = newCounterWindow(s.cfg.Window, s.cfg.slowInterval())
	}
	s.devs[key] = d
	s.order = append(s.order, key)
	sort.Strings(s.order)
	return d
}

// devName reads DEVNAME from sysfs; the number is the name when absent.
func devName(major, minor uint32) string {
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/uevent", major, minor))
	if err == nil {
		var name string
		lines(b, func(l []byte) bool {
			if bytes.HasPrefix(l, []byte("DEVNAME=")) {
				name = string(l[8:])
				return false
			}
			return true
		})
		if name != "" {
			return name
		}
	}
	return fmt.Sprintf("%d:%d", major, minor)
}

func (s *blkioSource) sample(now time.Time) {
	if s.probe != nil {
		s.sum = bpf.Hist{}
		_ = s.probe.ReadDevices(func(dev bpf.Dev, h *bpf.Hist) {
			s.sum.Add(h)
			d := s.device(dev.String(), dev.Major(), dev.Minor(), nil)
			if d != nil {
				d.win.Push(now, h)
				d.seen = now
			}
		})
		s.all.Push(now, &s.sum)
		return
	}
	if !s.slow.due(now) {
		return
	}
	b, err := s.pf.read("/proc/diskstats")
	if err != nil {
		return
	}
	var key [32]byte
	parseDiskstats(b, func(l *diskLine) {
		if l.ios == 0 {
			return // never used (loop, ram): not worth tracking
		}
		k := fmt.Appendf(key[:0], "%d:%d", l.major, l.minor)
		d := s.device(string(k), uint32(l.major), uint32(l.minor), l.name)
		if d == nil {
			return
		}
		v := [maxCounters]uint64{l.ios, l.ms}
		d.ctr.push(now, &v)
		d.seen = now
	})
}

func (s *blkioSource) fill(out *BlkioSignal) {
	out.Source = s.src
	out.Devices = out.Devices[:0]
	var ios, ms uint64
	for _, k := range s.order {
		d := s.devs[k]
		var lat Latency
		if s.probe != nil {
			lat = d.win.Latency()
		} else {
			dl, _, ok := d.ctr.delta()
			lat = unknownLatency
			if ok && dl[0] > 0 {
				mean := Num(float64(dl[1]) * 1e3 / float64(dl[0]))
				lat = Latency{P50Us: mean, P99Us: mean, Count: dl[0]}
				if d.whole { // partitions repeat their disk's I/O
					ios += dl[0]
					ms += dl[1]
				}
			}
		}
		if lat.Count > 0 {
			out.Devices = append(out.Devices, DeviceLatency{Dev: d.dev, Name: d.name, Latency: lat})
		}
	}
	if s.probe != nil {
		out.Latency = s.all.Latency()
		return
	}
	if ios == 0 {
		out.Latency = unknownLatency
		return
	}
	mean := Num(float64(ms) * 1e3 / float64(ios))
	out.Latency = Latency{P50Us: mean, P99Us: mean, Count: ios}
}

func (s *blkioSource) close() {
	if s.probe != nil {
		s.probe.Close()
	}
}
