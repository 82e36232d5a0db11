package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-agent/triage/internal/testenv"
)

// readelfRow is one row of `readelf --debug-dump=frames-interp`.
type readelfRow struct {
	loc      uint64
	cfa, rbp string // "rsp+8", "exp"; "c-16", "u"
	ra       string
}

// readelfRows runs readelf on path and returns the rows of its .eh_frame
// FDEs (readelf prints an FDE whose program is empty without rows; the
// CIE's rule applies there and is not compared), signal frames left out.
func readelfRows(t *testing.T, path string) []readelfRow {
	t.Helper()
	out, err := exec.Command("readelf", "--debug-dump=frames-interp", path).Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("readelf %s: %v", path, err)
	}
	if err != nil {
		// binutils 2.40 exits 1 on libc.so.6 after printing every table,
		// with no message; the rows it printed are still compared.
		t.Logf("readelf %s: %v (output kept)", path, err)
	}
	var rows []readelfRow
	var cols []string
	inEH, inFDE := false, false
	signalCIEs := map[string]bool{} // CIEs with the 'S' augmentation
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Contents of the "):
			inEH = strings.Contains(line, " .eh_frame ")
		case len(f) >= 5 && f[3] == "FDE":
			// Signal trampolines (__restore_rt) are left out of the
			// table on purpose: their frame is a ucontext, not a call.
			inFDE = !signalCIEs[strings.TrimPrefix(f[4], "cie=")]
		case len(f) >= 5 && f[3] == "CIE":
			if strings.Contains(f[4], "S") {
				signalCIEs[f[0]] = true
			}
			inFDE = false
		case len(f) == 0:
			inFDE = false
		case len(f) >= 2 && f[0] == "LOC" && f[1] == "CFA":
			cols = f
		case inEH && inFDE && len(f) == len(cols) && len(cols) > 0:
			loc, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				continue
			}
			row := readelfRow{loc: loc, cfa: f[1], rbp: "u", ra: "u"}
			for i, c := range cols {
				switch c {
				case "rbp":
					row.rbp = f[i]
				case "ra":
					row.ra = f[i]
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// TestTableAgreesWithReadelf compares every row of binutils' own
// interpretation of .eh_frame with the table's rule at that address, for
// the C library, the system Python (both built without frame pointers),
// libstdc++ and a gcc -O2 test program.
func TestTableAgreesWithReadelf(t *testing.T) {
	if _, err := exec.LookPath("readelf"); err != nil {
		testenv.Unavailable(t, "readelf (binutils) not installed")
	}
	bin, _ := runSelfDump(t, "gcc", "-O2")
	paths := []string{bin, "/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"}
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s: not on this machine", path)
			continue
		}
		t.Run(path, func(t *testing.T) {
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tab, err := FromELF(f, nil, ELFOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rows := readelfRows(t, path)
			if len(rows) < 5 {
				t.Fatalf("readelf printed %d rows", len(rows))
			}
			bad := 0
			for _, want := range rows {
				got, ok := tab.Lookup(want.loc)
				if msg := compareRow(want, got, ok); msg != "" {
					if bad < 10 {
						t.Errorf("at 0x%x: readelf %s %s ra=%s, table %s", want.loc, want.cfa, want.rbp, want.ra, msg)
					}
					bad++
				}
			}
			t.Logf("%d readelf rows, %d table rows (%d KiB), %d FDEs skipped, %d disagree", len(rows), tab.Len(), tab.Bytes()>>10, tab.Skipped, bad)
		})
	}
}

// compareRow returns "" when the table's row says what readelf says.
func compareRow(want readelfRow, got Row, ok bool) string {
	desc := fmt.Sprintf("%+v (found %v)", got, ok)
	if !ok {
		return desc
	}
	if want.ra == "u" {
		if got.Kind != KindOutermost {
			return desc
		}
		return ""
	}
	if want.ra != "c-8" {
		if got.Kind != KindUnsupported {
			return desc
		}
		return ""
	}
	switch {
	case want.cfa == "exp":
		if got.Kind != KindPLT && got.Kind != KindUnsupported {
			return desc
		}
		return ""
	case strings.HasPrefix(want.cfa, "rsp+"), strings.HasPrefix(want.cfa, "rbp+"):
		off, err := strconv.ParseInt(want.cfa[4:], 10, 64)
		kind := KindRSP
		if want.cfa[:3] == "rbp" {
			kind = KindRBP
		}
		if err != nil || got.Kind != kind || int64(got.CFAOff) != off {
			return desc
		}
	default: // another register
		if got.Kind != KindUnsupported {
			return desc
		}
		return ""
	}
	switch {
	case want.rbp == "u" || want.rbp == "s":
		if got.RBPOff != 0 {
			return desc
		}
	case strings.HasPrefix(want.rbp, "c"):
		off, err := strconv.ParseInt(want.rbp[1:], 10, 64)
		if err != nil || int64(got.RBPOff) != off {
			return desc
		}
	default:
		if got.RBPOff != RBPUnknown {
			return desc
		}
	}
	return ""
}
