package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/triage-agent/triage/agent/state"
	"github.com/triage-agent/triage/policy"
)

// NodeSignals is where the node part of the state vector comes from. The
// agent reads it on every state refresh (StateInterval), never per task.
type NodeSignals interface {
	// Read returns the current node reading.
	Read() NodeReading
	Close() error
}

// NodeReading is the node's signals in their units, with where each comes
// from.
type NodeReading struct {
	// Node is the node part of every task's state inputs, as
	// state.Assembler.NodeInputs fills it: the task fields are unknown, and
	// a value that is NaN or negative is unknown and feeds the feature's
	// neutral value.
	Node policy.Inputs
	// Sources names the source of each state feature ("ebpf", "procfs",
	// "none", "descriptor", "outcomes", "agent").
	Sources [policy.NumFeatures]string
	// Probes is every eBPF probe's state.
	Probes []ProbeState
	// Settled is true once every probe has either attached or fallen back,
	// and the first window of values is in: /readyz waits for it.
	Settled bool
}

// ProbeState is one probe's state for /metrics and /readyz.
type ProbeState struct {
	Name     string
	Attached bool
	Detail   string  // tier when attached, reason when not
	CostNs   float64 // CPU time the probe's programs used per second, when known (-1 unknown)
}

// Sources of the features the agent itself computes.
const (
	SourceDescriptor = "descriptor"
	SourceOutcomes   = "outcomes"
	SourceAgent      = "agent"
	SourceProcfs     = "procfs"
	SourceNone       = "none"
	SourceEBPF       = "ebpf"
)

// taskSources fills the features that never come from the node.
func taskSources(s *[policy.NumFeatures]string) {
	s[0] = SourceAgent
	s[1], s[2] = SourceDescriptor, SourceDescriptor
	s[3], s[4] = SourceOutcomes, SourceOutcomes
}

// procfsSignals is the fallback node source: CPU utilisation from
// /proc/stat and the TCP retransmit fraction from /proc/net/snmp, every
// other node feature neutral. It is what the agent serves from when no eBPF
// source is available at all.
type procfsSignals struct {
	asm                 *state.Assembler
	mu                  sync.Mutex
	lastBusy, lastTotal uint64
	lastRetr, lastOut   uint64
	primed              bool
	util, retr          float64
}

func newProcfsSignals(asm *state.Assembler) *procfsSignals {
	p := &procfsSignals{asm: asm, util: math.NaN(), retr: math.NaN()}
	p.sample()
	return p
}

func (p *procfsSignals) sample() {
	busy, total, errCPU := readProcStat()
	retr, out, errNet := readTCPSNMP()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.primed {
		if errCPU == nil && total > p.lastTotal {
			p.util = float64(busy-p.lastBusy) / float64(total-p.lastTotal)
		}
		if errNet == nil && out > p.lastOut {
			p.retr = float64(retr-p.lastRetr) / float64(out-p.lastOut)
		}
	}
	p.lastBusy, p.lastTotal, p.lastRetr, p.lastOut = busy, total, retr, out
	p.primed = true
}

func (p *procfsSignals) Read() NodeReading {
	p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	r := NodeReading{Node: p.asm.NodeInputs(nil), Settled: true}
	r.Node.CPUUtil, r.Node.RetransFraction = p.util, p.retr
	taskSources(&r.Sources)
	for _, i := range []int{6, 7, 8, 9} {
		r.Sources[i] = SourceNone
	}
	r.Sources[5] = SourceNone // no GPU reader in the fallback
	r.Sources[10], r.Sources[11] = SourceProcfs, SourceProcfs
	return r
}

func (p *procfsSignals) Close() error { return nil }

func readProcStat() (busy, total uint64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc/stat: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, x := range f[1:] {
		v, err := strconv.ParseUint(string(x), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}

func readTCPSNMP() (retrans, out uint64, err error) {
	f, err := os.Open("/proc/net/snmp")
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc/net/snmp: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var names []string
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) == 0 || string(fields[0]) != "Tcp:" {
			continue
		}
		if names == nil {
			for _, n := range fields[1:] {
				names = append(names, string(n))
			}
			continue
		}
		for i, v := range fields[1:] {
			if i >= len(names) {
				break
			}
			x, _ := strconv.ParseUint(string(v), 10, 64)
			switch names[i] {
			case "RetransSegs":
				retrans = x
			case "OutSegs":
				out = x
			}
		}
		return retrans, out, nil
	}
	return 0, 0, fmt.Errorf("/proc/net/snmp: no Tcp counters")
}
