package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
)

// drainCounts reads and deletes every key of an aggregation map and resolves
// its stacks. Keys are collected first, then each is removed with an atomic
// lookup-and-delete, so increments that race with the drain are not lost
// between a read and a delete.
func drainCounts(m *ebpf.Map, stacks *stackCache) ([]StackSample, error) {
	var keys []profilerProfilerKey
	var k profilerProfilerKey
	var v uint64
	it := m.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
		if len(keys) > int(m.MaxEntries())*2 {
			break // the map is bounded; never loop forever on a churning map
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("iterating counts: %w", err)
	}
	out := make([]StackSample, 0, len(keys))
	for i := range keys {
		key := &keys[i]
		if err := m.LookupAndDelete(key, &v); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue
			}
			// Kernels before 5.14 have no lookup-and-delete for hash maps.
			if err := m.Lookup(key, &v); err != nil {
				continue
			}
			_ = m.Delete(key)
		}
		s := StackSample{
			Pid: key.Pid, Tgid: key.Tgid, CgroupID: key.Cgroup,
			Comm:  commString(key.Comm),
			Value: v,
		}
		s.User, s.UserErr = stacks.resolve(key.UserStack)
		s.Kernel, s.KernelErr = stacks.resolve(key.KernelStack)
		out = append(out, s)
	}
	return out, nil
}

func drainLost(m *ebpf.Map) uint64 {
	var per []uint64
	if err := m.Lookup(uint32(0), &per); err != nil {
		return 0
	}
	var total uint64
	for _, n := range per {
		total += n
	}
	zero := make([]uint64, len(per))
	_ = m.Put(uint32(0), zero)
	return total
}

func commString(c [16]int8) string {
	b := make([]byte, 0, len(c))
	for _, ch := range c {
		if ch == 0 {
			break
		}
		b = append(b, byte(ch))
	}
	return string(b)
}

// stackCache remembers stacks already read: without BPF_F_REUSE_STACKID a
// stack id's content never changes until it is deleted, so each stack is
// copied out of the kernel once. When half of the map is in use the map and
// the cache are cleared together, which keeps the map from filling up (a full
// map drops new stacks); samples taken during the clear lose their stack and
// show as "[stack evicted]".
type stackCache struct {
	m     *ebpf.Map
	limit int
	byID  map[int32][]uint64
	buf   []uint64
}

func newStackCache(m *ebpf.Map, entries uint32) *stackCache {
	return &stackCache{m: m, limit: int(entries) / 2, byID: map[int32][]uint64{}, buf: make([]uint64, m.ValueSize()/8)}
}

func (c *stackCache) resolve(id int32) ([]uint64, int32) {
	if id < 0 {
		return nil, id
	}
	if s, ok := c.byID[id]; ok {
		return s, 0
	}
	if err := c.m.Lookup(uint32(id), &c.buf); err != nil {
		return nil, -2 // ENOENT: evicted by a clear
	}
	n := 0
	for n < len(c.buf) && c.buf[n] != 0 {
		n++
	}
	s := append([]uint64(nil), c.buf[:n]...)
	c.byID[id] = s
	return s, 0
}

func (c *stackCache) maybeClear() {
	if len(c.byID) < c.limit {
		return
	}
	var k uint32
	var keys []uint32
	it := c.m.Iterate()
	for it.Next(&k, &c.buf) {
		keys = append(keys, k)
	}
	for _, k := range keys {
		_ = c.m.Delete(k)
	}
	clear(c.byID)
}

// ActivePIDs lists the processes (tgids) that have samples in the window
// being filled, without draining it, so that their mappings can be captured
// while they still run: a process that exits before the drain would
// otherwise leave only module+offset frames.
func (p *Profiler) ActivePIDs() ([]uint32, error) {
	if p.closed {
		return nil, ErrProfilerShut
	}
	seen := map[uint32]bool{}
	var out []uint32
	scan := func(m *ebpf.Map) error {
		var k profilerProfilerKey
		var v uint64
		it := m.Iterate()
		for n := 0; it.Next(&k, &v) && n <= int(m.MaxEntries()); n++ {
			if !seen[k.Tgid] {
				seen[k.Tgid] = true
				out = append(out, k.Tgid)
			}
		}
		return it.Err()
	}
	cur := p.gen & 1
	maps := []*ebpf.Map{p.on.ProfileCounts0}
	if cur == 1 {
		maps[0] = p.on.ProfileCounts1
	}
	if p.off != nil {
		if cur == 1 {
			maps = append(maps, p.off.OffcpuCounts1)
		} else {
			maps = append(maps, p.off.OffcpuCounts0)
		}
	}
	for _, m := range maps {
		if err := scan(m); err != nil {
			return nil, fmt.Errorf("listing active processes: %w", err)
		}
	}
	return out, nil
}
