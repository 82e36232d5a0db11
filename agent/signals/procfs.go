package signals

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// ErrProcTooLarge is returned for a procfs file over maxProcFile: a socket
// table that large is read no further rather than grown into memory.
var ErrProcTooLarge = errors.New("procfs file too large")

// maxProcFile bounds one procfs read (about 50k sockets in /proc/net/tcp).
const maxProcFile = 8 << 20

// procFile reads procfs files into a buffer it keeps between reads.
type procFile struct{ buf []byte }

func (p *procFile) read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if p.buf == nil {
		p.buf = make([]byte, 0, 4096)
	}
	p.buf = p.buf[:0]
	for {
		if len(p.buf) == cap(p.buf) {
			if cap(p.buf) >= maxProcFile {
				return nil, fmt.Errorf("%s: %w", path, ErrProcTooLarge)
			}
			nb := make([]byte, len(p.buf), 2*cap(p.buf))
			copy(nb, p.buf)
			p.buf = nb
		}
		n, err := f.Read(p.buf[len(p.buf):cap(p.buf)])
		p.buf = p.buf[:len(p.buf)+n]
		if err == io.EOF {
			return p.buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// lines calls fn with each line of b (no allocation).
func lines(b []byte, fn func(line []byte) bool) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		var line []byte
		if i < 0 {
			line, b = b, nil
		} else {
			line, b = b[:i], b[i+1:]
		}
		if !fn(line) {
			return
		}
	}
}

// field returns the i-th whitespace-separated field of line, or nil.
func field(line []byte, i int) []byte {
	for k := 0; ; k++ {
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			return nil
		}
		j := bytes.IndexAny(line, " \t")
		if j < 0 {
			j = len(line)
		}
		if k == i {
			return line[:j]
		}
		line = line[j:]
	}
}

func atou(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

func hexu(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// parsePressureSomeAvg10 reads "some avg10=X ..." of /proc/pressure/cpu as
// a fraction (the file gives percent).
func parsePressureSomeAvg10(b []byte) (float64, error) {
	var out float64
	found := false
	lines(b, func(l []byte) bool {
		if !bytes.HasPrefix(l, []byte("some ")) {
			return true
		}
		i := bytes.Index(l, []byte("avg10="))
		if i < 0 {
			return false
		}
		v := l[i+6:]
		if j := bytes.IndexByte(v, ' '); j >= 0 {
			v = v[:j]
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err == nil && f >= 0 {
			out, found = f/100, true
		}
		return false
	})
	if !found {
		return 0, fmt.Errorf("no 'some avg10=' in pressure file")
	}
	return out, nil
}

// parseProcStatCPU reads the aggregate "cpu" line of /proc/stat: busy and
// total jiffies (idle and iowait count as not busy; guest time is already
// inside user and nice).
func parseProcStatCPU(b []byte) (busy, total uint64, err error) {
	err = fmt.Errorf("no aggregate cpu line in /proc/stat")
	lines(b, func(l []byte) bool {
		if !bytes.HasPrefix(l, []byte("cpu ")) {
			return true
		}
		var v [8]uint64
		for i := range v {
			x, ok := atou(field(l, i+1))
			if !ok && i < 4 {
				return false
			}
			v[i] = x
		}
		for _, x := range v {
			total += x
		}
		busy = total - v[3] - v[4]
		err = nil
		return false
	})
	return busy, total, err
}

// parseSchedstat reads "run_ns wait_ns timeslices" of /proc/PID/schedstat.
func parseSchedstat(b []byte) (runNs, waitNs, slices uint64, err error) {
	var ok1, ok2, ok3 bool
	runNs, ok1 = atou(field(b, 0))
	waitNs, ok2 = atou(field(b, 1))
	slices, ok3 = atou(bytes.TrimSpace(field(b, 2)))
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, 0, fmt.Errorf("malformed schedstat %q", bytes.TrimSpace(b))
	}
	return runNs, waitNs, slices, nil
}

// diskLine is one /proc/diskstats row's completed I/Os and time spent.
type diskLine struct {
	major, minor uint64
	name         []byte
	ios, ms      uint64 // reads+writes completed, ms spent on them
}

// parseDiskstats calls fn for each row of /proc/diskstats.
func parseDiskstats(b []byte, fn func(d *diskLine)) {
	var d diskLine
	lines(b, func(l []byte) bool {
		var ok [6]bool
		d.major, ok[0] = atou(field(l, 0))
		d.minor, ok[1] = atou(field(l, 1))
		d.name = field(l, 2)
		r, okr := atou(field(l, 3))
		rms, okrms := atou(field(l, 6))
		w, okw := atou(field(l, 7))
		wms, okwms := atou(field(l, 10))
		ok[2], ok[3], ok[4], ok[5] = okr, okrms, okw, okwms
		for _, v := range ok {
			if !v {
				return true // skip malformed rows
			}
		}
		d.ios, d.ms = r+w, rms+wms
		fn(&d)
		return true
	})
}

// parseNetTCPListen calls fn with the local port and rx_queue of each
// LISTEN row of /proc/net/tcp or tcp6. For a listener the kernel prints
// sk_ack_backlog as rx_queue (the max is not in the file).
func parseNetTCPListen(b []byte, fn func(port uint16, backlog uint32)) {
	lines(b, func(l []byte) bool {
		st := field(l, 3)
		if !bytes.Equal(st, []byte("0A")) {
			return true
		}
		local := field(l, 1)
		i := bytes.LastIndexByte(local, ':')
		q := field(l, 4)
		j := bytes.IndexByte(q, ':')
		if i < 0 || j < 0 {
			return true
		}
		port, ok1 := hexu(local[i+1:])
		rx, ok2 := hexu(q[j+1:])
		if ok1 && ok2 && port <= 0xffff {
			fn(uint16(port), uint32(rx))
		}
		return true
	})
}

// parseSNMPPair finds header/value line pairs starting with prefix (as in
// /proc/net/snmp "Tcp:" and /proc/net/netstat "TcpExt:") and returns the
// values of the named columns, in order; missing columns are not ok.
func parseSNMPPair(b []byte, prefix string, names []string, out []uint64) error {
	var header []byte
	found := 0
	p := []byte(prefix)
	lines(b, func(l []byte) bool {
		if !bytes.HasPrefix(l, p) {
			return true
		}
		if header == nil {
			header = l
			return true
		}
		for k, name := range names {
			for i := 1; ; i++ {
				h := field(header, i)
				if h == nil {
					break
				}
				if string(h) == name {
					if v, ok := atou(field(l, i)); ok {
						out[k] = v
						found++
					} else if len(field(l, i)) > 0 && field(l, i)[0] == '-' {
						out[k] = 0 // signed columns (MaxConn) are not counters
						found++
					}
					break
				}
			}
		}
		return false
	})
	if found != len(names) {
		return fmt.Errorf("%s: found %d of %d columns %v", prefix, found, len(names), names)
	}
	return nil
}
