package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/wire"
)

// parseAgentFlags runs `triage agent`'s flag parsing and finish on args,
// env and an agent.yaml.
func parseAgentFlags(args []string, env map[string]string, yaml string) (agent.Config, error) {
	var cfg agent.Config
	fs, finish := agentFlags(&cfg)
	fs.SetOutput(io.Discard)
	files := map[string]string{}
	if yaml != "" {
		files["agent.yaml"] = yaml
		args = append([]string{"--config", "agent.yaml"}, args...)
	}
	if err := parseFlagsFrom(fs, args, envOf(env), filesOf(files)); err != nil {
		return cfg, err
	}
	return cfg, finish()
}

// The connection-limit and decision-table flags come from the command
// line, the environment or the config file like every other flag; the
// defaults are the endpoint's and the table's own; 0 stays 0 (agent.Config
// reads it as the default).
func TestAgentLimitAndTableFlagsReachTheConfig(t *testing.T) {
	cfg, err := parseAgentFlags(nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConns != serve.DefaultMaxConns || cfg.MaxConnsPerIP != serve.DefaultMaxConnsPerIP ||
		cfg.MaxNewConnsPerIP != serve.DefaultMaxNewConnsPerIP || cfg.MaxStreamsPerConn != serve.DefaultMaxStreamsPerConn ||
		cfg.TableInterval != agent.DefaultTableInterval || cfg.TableMaxCells != agent.DefaultTableMaxCells {
		t.Errorf("defaults: conns %d per addr %d new %d streams %d table %v %d", cfg.MaxConns, cfg.MaxConnsPerIP,
			cfg.MaxNewConnsPerIP, cfg.MaxStreamsPerConn, cfg.TableInterval, cfg.TableMaxCells)
	}

	cfg, err = parseAgentFlags(
		[]string{"--max-conns", "300", "--table-interval", "25ms"},
		map[string]string{"TRIAGE_MAX_CONNS_PER_ADDR": "8", "TRIAGE_TABLE_MAX_CELLS": "1000", "TRIAGE_MAX_CONNS": "5"},
		"max-new-conns-per-addr: 20\nmax_streams_per_conn: 16\ntable-interval: 1s\nmax-conns-per-addr: 9\n")
	if err != nil {
		t.Fatal(err)
	}
	// The command line beats the environment, which beats the file.
	if cfg.MaxConns != 300 || cfg.MaxConnsPerIP != 8 || cfg.MaxNewConnsPerIP != 20 || cfg.MaxStreamsPerConn != 16 ||
		cfg.TableInterval != 25*time.Millisecond || cfg.TableMaxCells != 1000 {
		t.Errorf("set: conns %d per addr %d new %d streams %d table %v %d", cfg.MaxConns, cfg.MaxConnsPerIP,
			cfg.MaxNewConnsPerIP, cfg.MaxStreamsPerConn, cfg.TableInterval, cfg.TableMaxCells)
	}

	cfg, err = parseAgentFlags([]string{"--max-conns", "0", "--table-max-cells", "0", "--table-interval", "0s"}, nil, "")
	if err != nil || cfg.MaxConns != 0 || cfg.TableMaxCells != 0 || cfg.TableInterval != 0 {
		t.Errorf("zeros: conns %d table %v %d: %v", cfg.MaxConns, cfg.TableInterval, cfg.TableMaxCells, err)
	}
}

// A negative limit, or a table no client would accept, is refused with an
// error that names the flag, from wherever the value came.
func TestAgentRefusesBadLimitAndTableFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		yaml string
		flag string
	}{
		{args: []string{"--max-conns", "-1"}, flag: "--max-conns "},
		{args: []string{"--max-conns-per-addr", "-2"}, flag: "--max-conns-per-addr "},
		{env: map[string]string{"TRIAGE_MAX_NEW_CONNS_PER_ADDR": "-5"}, flag: "--max-new-conns-per-addr "},
		{yaml: "max-streams-per-conn: -1\n", flag: "--max-streams-per-conn "},
		{args: []string{"--max-streams-per-conn", "5000000000"}, flag: "--max-streams-per-conn "},
		{args: []string{"--table-interval", "-10ms"}, flag: "--table-interval "},
		{env: map[string]string{"TRIAGE_TABLE_MAX_CELLS": "-1"}, flag: "--table-max-cells "},
		{yaml: "table-max-cells: 300000\n", flag: "--table-max-cells "},
	} {
		_, err := parseAgentFlags(c.args, c.env, c.yaml)
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v %v %q: err %v, want one naming %s", c.args, c.env, c.yaml, err, c.flag)
		}
	}
	// agent.Config refuses the same values from an embedder.
	for _, cfg := range []agent.Config{{MaxConnsPerIP: -1}, {MaxStreamsPerConn: -3}, {TableMaxCells: wire.MaxTableCells + 1}} {
		cfg.NoEBPF, cfg.ExperienceDir, cfg.FlamegraphDir, cfg.AdminAddr, cfg.QUICAddr = true, "-", "-", "127.0.0.1:0", "127.0.0.1:0"
		if a, err := agent.New(cfg); !errors.Is(err, agent.ErrBadConfig) {
			if a != nil {
				a.Close()
			}
			t.Errorf("agent.New with %+v: %v, want ErrBadConfig", cfg, err)
		}
	}
}

// startAgentWithFlags runs a real agent configured by `triage agent`'s
// flags (no eBPF, no state directories: the endpoint is what is tested).
func startAgentWithFlags(t *testing.T, args ...string) (*agent.Agent, func()) {
	t.Helper()
	cfg, err := parseAgentFlags(args, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// The Go memory limit is process-wide: leave the test binary's alone.
	cfg.NoEBPF, cfg.ExperienceDir, cfg.GoMemoryLimit = true, "-", 0
	return startTestAgent(t, cfg)
}

// The limit flags reach the endpoint: over real QUIC on loopback, a third
// connection from one address is refused with --max-conns-per-addr 2 (and
// with --max-conns 2), the third new connection within a second is refused
// before its handshake with --max-new-conns-per-addr 2, and a connection
// can open only 3 streams with --max-streams-per-conn 3.
func TestAgentLimitFlagsReachTheEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(a *agent.Agent) (*client.Client, error) {
		return client.Dial(ctx, a.QUICAddr().String(), client.Config{PinSHA256: a.Fingerprint(), ServerName: "localhost", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	for _, flag := range []string{"--max-conns-per-addr", "--max-conns"} {
		t.Run(strings.TrimPrefix(flag, "--"), func(t *testing.T) {
			a, stop := startAgentWithFlags(t, flag, "2")
			defer stop()
			for i := range 2 {
				c, err := dial(a)
				if err != nil {
					t.Fatalf("connection %d of 2: %v", i+1, err)
				}
				defer c.Close()
			}
			_, err := dial(a)
			var se *client.ServerError
			if !errors.As(err, &se) || se.Code != wire.CodeTooManyConnections {
				t.Fatalf("third connection with %s 2: %v, want CodeTooManyConnections", flag, err)
			}
		})
	}
	t.Run("max-new-conns-per-addr", func(t *testing.T) {
		a, stop := startAgentWithFlags(t, "--max-new-conns-per-addr", "2")
		defer stop()
		var err error
		for i := 0; i < 3 && err == nil; i++ {
			var c *client.Client
			if c, err = dial(a); err == nil {
				c.Close()
			} else if i < 2 {
				t.Fatalf("connection %d of 2: %v", i+1, err)
			}
		}
		var te *quic.TransportError
		if !errors.As(err, &te) || te.ErrorCode != quic.ConnectionRefused {
			t.Fatalf("third new connection within a second: %v, want CONNECTION_REFUSED", err)
		}
	})
	t.Run("max-streams-per-conn", func(t *testing.T) {
		a, stop := startAgentWithFlags(t, "--max-streams-per-conn", "3")
		defer stop()
		conn, err := quic.DialAddr(ctx, a.QUICAddr().String(),
			&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"triage/1"}}, nil) // the test's own client: no identity to check
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseWithError(0, "")
		opened := 0
		for ; opened < 10; opened++ {
			// OpenStream does not wait for credit: past the agent's limit
			// it fails at once (the streams stay open, none is returned).
			if _, err := conn.OpenStream(); err != nil {
				var limit *quic.StreamLimitReachedError
				if !errors.As(err, &limit) {
					t.Fatalf("stream %d: %v", opened+1, err)
				}
				break
			}
		}
		if opened != 3 {
			t.Fatalf("opened %d streams with --max-streams-per-conn 3", opened)
		}
	})
}
