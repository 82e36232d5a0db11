package main

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"strings"
	"testing"
	"time"
)

type flagFixture struct {
	fs       *flag.FlagSet
	addr     *string
	workers  *int
	interval *time.Duration
	debug    *bool
}

func newFixture() flagFixture {
	fs := newFlagSet("demo", "a demo command")
	var x flagFixture
	x.fs = fs
	x.addr = fs.String("quic-addr", ":4433", "UDP address")
	x.workers = fs.Int("workers", 4, "worker count")
	x.interval = fs.Duration("flamegraph-interval", time.Minute, "window length")
	x.debug = fs.Bool("debug", false, "debug logging")
	addConfigFlag(fs)
	fs.SetOutput(&bytes.Buffer{})
	return x
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func filesOf(m map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		v, ok := m[p]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(v), nil
	}
}

func TestFlagPrecedence(t *testing.T) {
	yamlFile := "quic-addr: \":1111\"\nworkers: 7\nflamegraph_interval: 30s\ndebug: true\n"
	files := filesOf(map[string]string{"c.yaml": yamlFile})
	cases := []struct {
		name        string
		args        []string
		env         map[string]string
		wantAddr    string
		wantWorkers int
		wantIntv    time.Duration
		wantDebug   bool
	}{
		{"defaults", nil, nil, ":4433", 4, time.Minute, false},
		{"yaml over default", []string{"--config", "c.yaml"}, nil, ":1111", 7, 30 * time.Second, true},
		{"config path from env", nil, map[string]string{"TRIAGE_CONFIG": "c.yaml"}, ":1111", 7, 30 * time.Second, true},
		{"env over yaml", []string{"--config", "c.yaml"}, map[string]string{"TRIAGE_QUIC_ADDR": ":2222", "TRIAGE_FLAMEGRAPH_INTERVAL": "5s"}, ":2222", 7, 5 * time.Second, true},
		{"flag over env over yaml", []string{"--config", "c.yaml", "--quic-addr", ":3333", "--debug=false"}, map[string]string{"TRIAGE_QUIC_ADDR": ":2222", "TRIAGE_WORKERS": "9"}, ":3333", 9, 30 * time.Second, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newFixture()
			if err := parseFlagsFrom(x.fs, c.args, envOf(c.env), files); err != nil {
				t.Fatal(err)
			}
			if *x.addr != c.wantAddr || *x.workers != c.wantWorkers || *x.interval != c.wantIntv || *x.debug != c.wantDebug {
				t.Fatalf("got addr=%q workers=%d interval=%v debug=%v, want %q %d %v %v",
					*x.addr, *x.workers, *x.interval, *x.debug, c.wantAddr, c.wantWorkers, c.wantIntv, c.wantDebug)
			}
		})
	}
}

func TestFlagErrors(t *testing.T) {
	files := filesOf(map[string]string{
		"unknown.yaml": "no-such-flag: 1\n",
		"badval.yaml":  "workers: many\n",
		"notyaml.yaml": "workers: [1\n",
		"nested.yaml":  "workers: {a: 1}\n",
		"self.yaml":    "config: other.yaml\n",
	})
	cases := []struct {
		name, want string
		args       []string
		env        map[string]string
		isConfig   bool
	}{
		{"unknown key", "names no flag", []string{"--config", "unknown.yaml"}, nil, true},
		{"bad value", "workers", []string{"--config", "badval.yaml"}, nil, true},
		{"not yaml", "parsing YAML", []string{"--config", "notyaml.yaml"}, nil, true},
		{"nested map", "not a flag value", []string{"--config", "nested.yaml"}, nil, true},
		{"config names config", "names no flag", []string{"--config", "self.yaml"}, nil, true},
		{"missing file", "missing.yaml", []string{"--config", "missing.yaml"}, nil, true},
		{"bad env", "TRIAGE_WORKERS", nil, map[string]string{"TRIAGE_WORKERS": "x"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newFixture()
			err := parseFlagsFrom(x.fs, c.args, envOf(c.env), files)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.want)
			}
			if c.isConfig && !errors.Is(err, ErrBadConfig) {
				t.Fatalf("err = %v, want ErrBadConfig", err)
			}
		})
	}
}

func TestConfigTooLarge(t *testing.T) {
	x := newFixture()
	big := strings.Repeat("#", maxConfigBytes+1)
	err := parseFlagsFrom(x.fs, []string{"--config", "big"}, envOf(nil), filesOf(map[string]string{"big": big}))
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigListValue(t *testing.T) {
	fs := newFlagSet("demo", "")
	probes := fs.String("probes", "all", "probes")
	addConfigFlag(fs)
	err := parseFlagsFrom(fs, []string{"--config", "c"}, envOf(nil), filesOf(map[string]string{"c": "probes: [runq, blkio]\n"}))
	if err != nil {
		t.Fatal(err)
	}
	if *probes != "runq,blkio" {
		t.Fatalf("probes = %q", *probes)
	}
}

func TestHelpListsEveryFlagWithDefaultAndEnv(t *testing.T) {
	x := newFixture()
	var out bytes.Buffer
	x.fs.SetOutput(&out)
	err := parseFlagsFrom(x.fs, []string{"--help"}, envOf(nil), filesOf(nil))
	if !errors.Is(err, flag.ErrHelp) || helpIsNotAnError(err) != nil {
		t.Fatalf("err = %v", err)
	}
	text := out.String()
	for _, want := range []string{
		"--quic-addr string", "default: :4433; env: TRIAGE_QUIC_ADDR",
		"--workers int", "default: 4; env: TRIAGE_WORKERS",
		"--flamegraph-interval duration", "default: 1m0s; env: TRIAGE_FLAMEGRAPH_INTERVAL",
		"--debug", "default: false; env: TRIAGE_DEBUG",
		"--config string", `default: ""; env: TRIAGE_CONFIG`,
		"a demo command",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("help lacks %q:\n%s", want, text)
		}
	}
}
