package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// releaseFilePages unmaps the pages of this process's read-only file
// mappings (the binary's and the shared libraries' code and constants)
// and asks the kernel to map them back in small pages only.
//
// The rule: only a mapping that is not writable and holds no anonymous
// (copy-on-write) page is released, so every page dropped is a clean copy
// of its file and the next access maps it again from the page cache (a
// minor fault, no I/O while the file stays cached). Pages the agent goes on
// using come back; what stays out is code run once at start (ONNX
// Runtime's kernel registrations, flag parsing, the BPF loaders) and the
// neighbours that the kernel mapped with them: on a file system with large
// folios a touched page brings in its whole folio, up to 2 MiB, and fault
// around maps 64 KiB. MADV_NOHUGEPAGE keeps later faults from mapping
// whole 2 MiB folios again.
//
// It returns the resident bytes it released.
func releaseFilePages() (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("reading mappings: %w", err)
	}
	defer f.Close()
	var released int64
	var cur struct {
		start, end uint64
		eligible   bool
		rss, anon  int64
		haveAnon   bool
	}
	flush := func() {
		if !cur.eligible || !cur.haveAnon || cur.anon != 0 || cur.rss == 0 {
			return
		}
		length := uintptr(cur.end - cur.start)
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(cur.start), length, unix.MADV_NOHUGEPAGE)
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(cur.start), length, unix.MADV_DONTNEED); errno == 0 {
			released += cur.rss
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if start, end, eligible, ok := parseMappingHeader(line); ok {
			flush()
			cur.start, cur.end, cur.eligible = start, end, eligible
			cur.rss, cur.anon, cur.haveAnon = 0, 0, false
			continue
		}
		switch {
		case bytes.HasPrefix(line, []byte("Rss:")):
			cur.rss = smapsKiB(line) << 10
		case bytes.HasPrefix(line, []byte("Anonymous:")):
			cur.anon, cur.haveAnon = smapsKiB(line)<<10, true
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return released, fmt.Errorf("reading mappings: %w", err)
	}
	return released, nil
}

// parseMappingHeader reads an smaps header line
// ("start-end perms offset dev inode path"); eligible is a mapping of a
// file that is neither writable nor a device or special mapping.
func parseMappingHeader(line []byte) (start, end uint64, eligible, ok bool) {
	fields := bytes.Fields(line)
	if len(fields) < 5 {
		return 0, 0, false, false
	}
	dash := bytes.IndexByte(fields[0], '-')
	if dash <= 0 || len(fields[1]) != 4 {
		return 0, 0, false, false
	}
	var err error
	if start, err = strconv.ParseUint(string(fields[0][:dash]), 16, 64); err != nil {
		return 0, 0, false, false
	}
	if end, err = strconv.ParseUint(string(fields[0][dash+1:]), 16, 64); err != nil || end <= start {
		return 0, 0, false, false
	}
	perms := fields[1]
	eligible = len(fields) >= 6 && fields[5][0] == '/' && !bytes.HasPrefix(fields[5], []byte("/dev/")) &&
		perms[0] == 'r' && perms[1] != 'w'
	return start, end, eligible, true
}

// smapsKiB is the value of an smaps "Name:   123 kB" line.
func smapsKiB(line []byte) int64 {
	fields := bytes.Fields(line)
	if len(fields) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(string(fields[1]), 10, 64)
	return n
}
