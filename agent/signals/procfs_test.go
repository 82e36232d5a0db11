package signals

import (
	"os"
	"path/filepath"
	"testing"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParsePressure(t *testing.T) {
	v, err := parsePressureSomeAvg10(fixture(t, "pressure_cpu"))
	if err != nil || v < 0.7173 || v > 0.7175 {
		t.Fatalf("some avg10 = %v, %v; want 0.7174", v, err)
	}
	if _, err := parsePressureSomeAvg10([]byte("full avg10=1.00\n")); err == nil {
		t.Fatal("missing some line accepted")
	}
}

func TestParseProcStat(t *testing.T) {
	busy, total, err := parseProcStatCPU(fixture(t, "stat"))
	// cpu  61177 0 16745 357340 782 0 324 2036
	if err != nil || total != 61177+16745+357340+782+324+2036 || busy != total-357340-782 {
		t.Fatalf("busy %d total %d err %v", busy, total, err)
	}
	if _, _, err := parseProcStatCPU([]byte("cpu0 1 2 3\n")); err == nil {
		t.Fatal("no aggregate line accepted")
	}
}

func TestParseSchedstat(t *testing.T) {
	r, w, s, err := parseSchedstat([]byte("123 456 7\n"))
	if err != nil || r != 123 || w != 456 || s != 7 {
		t.Fatalf("got %d %d %d %v", r, w, s, err)
	}
	for _, bad := range []string{"", "1 2", "a b c", "1 2 -3"} {
		if _, _, _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseDiskstats(t *testing.T) {
	var got []diskLine
	parseDiskstats(fixture(t, "diskstats"), func(d *diskLine) { got = append(got, *d) })
	if len(got) == 0 || string(got[0].name) != "vda" || got[0].major != 254 || got[0].ios == 0 {
		t.Fatalf("parsed %+v", got)
	}
	parseDiskstats([]byte("garbage\n 1 2\n"), func(d *diskLine) { t.Fatalf("malformed row parsed: %+v", d) })
}

func TestParseNetTCPListen(t *testing.T) {
	type row struct {
		port    uint16
		backlog uint32
	}
	var got []row
	parseNetTCPListen(fixture(t, "net_tcp"), func(p uint16, b uint32) { got = append(got, row{p, b}) })
	want := []row{{8080, 3}, {22, 0}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("listeners %v, want %v", got, want)
	}
}

func TestParseSNMP(t *testing.T) {
	var v [2]uint64
	if err := parseSNMPPair(fixture(t, "snmp"), "Tcp:", snmpTCPCols, v[:]); err != nil {
		t.Fatal(err)
	}
	if v[0] != 12199 || v[1] != 8 {
		t.Fatalf("OutSegs %d RetransSegs %d, want 12199 8", v[0], v[1])
	}
	var lo [1]uint64
	if err := parseSNMPPair(fixture(t, "netstat"), "TcpExt:", netstatExtCols, lo[:]); err != nil {
		t.Fatal(err)
	}
	if err := parseSNMPPair([]byte("Tcp: A\nTcp: 1\n"), "Tcp:", snmpTCPCols, v[:]); err == nil {
		t.Fatal("missing columns accepted")
	}
}

// FuzzProcParsers feeds arbitrary bytes to every parser: none may panic.
func FuzzProcParsers(f *testing.F) {
	for _, n := range []string{"snmp", "netstat", "diskstats", "pressure_cpu", "stat", "net_tcp"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parsePressureSomeAvg10(b)
		_, _, _ = parseProcStatCPU(b)
		_, _, _, _ = parseSchedstat(b)
		parseDiskstats(b, func(*diskLine) {})
		parseNetTCPListen(b, func(uint16, uint32) {})
		var v [2]uint64
		_ = parseSNMPPair(b, "Tcp:", snmpTCPCols, v[:])
	})
}
