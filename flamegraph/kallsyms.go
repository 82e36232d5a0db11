package flamegraph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// ErrKallsymsRestricted means /proc/kallsyms shows only zero addresses
// (kptr_restrict, or not root): kernel frames then show as [kernel]+0x...
var ErrKallsymsRestricted = errors.New("kernel symbol addresses are hidden (kptr_restrict or no CAP_SYSLOG)")

// KernelSymbols is a sorted kernel text symbol table. Names live in one
// string blob to keep ~150k symbols in a few MB.
type KernelSymbols struct {
	addrs    []uint64
	offs     []uint32 // start of name i in blob; name ends at offs[i+1]
	mods     []uint16 // index into modNames (0 = vmlinux)
	blob     string
	modNames []string
}

// LoadKernelSymbols reads /proc/kallsyms.
func LoadKernelSymbols() (*KernelSymbols, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("opening kallsyms: %w", err)
	}
	defer f.Close()
	return ParseKallsyms(f)
}

// ParseKallsyms parses the /proc/kallsyms format ("addr type name [module]"),
// keeping text symbols only.
func ParseKallsyms(r io.Reader) (*KernelSymbols, error) {
	type entry struct {
		addr uint64
		name string
		mod  uint16
	}
	var entries []entry
	modIndex := map[string]uint16{"": 0}
	ks := &KernelSymbols{modNames: []string{""}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	nonZero := false
	for sc.Scan() {
		// "ffffffff81000000 T _stext" or "... t name\t[module]"; parsed by
		// hand because this runs over ~150k lines at every agent start.
		line := sc.Bytes()
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 || len(line) < sp+4 || line[sp+2] != ' ' {
			continue
		}
		if t := line[sp+1]; t != 't' && t != 'T' && t != 'w' && t != 'W' {
			continue
		}
		addr, err := strconv.ParseUint(string(line[:sp]), 16, 64)
		if err != nil {
			continue
		}
		if addr != 0 {
			nonZero = true
		}
		rest := line[sp+3:]
		name, modPart := rest, []byte(nil)
		if i := bytes.IndexAny(rest, " \t"); i >= 0 {
			name, modPart = rest[:i], bytes.TrimSpace(rest[i+1:])
		}
		var mod uint16
		if len(modPart) > 0 {
			m := string(bytes.Trim(modPart, "[]"))
			idx, ok := modIndex[m]
			if !ok && len(ks.modNames) < 65535 {
				idx = uint16(len(ks.modNames))
				modIndex[m] = idx
				ks.modNames = append(ks.modNames, m)
			}
			mod = idx
		}
		entries = append(entries, entry{addr, string(name), mod})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading kallsyms: %w", err)
	}
	if len(entries) > 0 && !nonZero {
		return nil, ErrKallsymsRestricted
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].addr < entries[j].addr })
	var b strings.Builder
	total := 0
	for _, e := range entries {
		total += len(e.name)
	}
	b.Grow(total) // one exact allocation, not a doubled one kept for the agent's life
	ks.addrs = make([]uint64, len(entries))
	ks.offs = make([]uint32, len(entries)+1)
	ks.mods = make([]uint16, len(entries))
	for i, e := range entries {
		ks.addrs[i] = e.addr
		ks.offs[i] = uint32(b.Len())
		ks.mods[i] = e.mod
		b.WriteString(e.name)
	}
	ks.offs[len(entries)] = uint32(b.Len())
	ks.blob = b.String()
	return ks, nil
}

// Lookup returns the function containing addr and its module ("" for the
// kernel image itself).
func (k *KernelSymbols) Lookup(addr uint64) (name, module string, ok bool) {
	if k == nil || len(k.addrs) == 0 || addr < k.addrs[0] {
		return "", "", false
	}
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > addr }) - 1
	return k.blob[k.offs[i]:k.offs[i+1]], k.modNames[k.mods[i]], true
}

// Len is the number of symbols.
func (k *KernelSymbols) Len() int { return len(k.addrs) }
