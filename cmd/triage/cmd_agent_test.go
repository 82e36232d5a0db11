package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/triage-agent/triage/agent"
	"github.com/triage-agent/triage/policy/guard"
)

func TestAgentHelpDocumentsEveryFlag(t *testing.T) {
	var cfg agent.Config
	fs, _ := agentFlags(&cfg)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.Usage()
	help := out.String()
	for _, name := range []string{"quic-addr", "admin-addr", "model", "device", "onnxruntime-lib", "config", "client-ca", "token",
		"tls-cert", "tls-key", "insecure-listen-any", "experience-dir", "flamegraph-dir", "flamegraph-interval", "shadow-model",
		"batch-window", "workers", "task-timeout", "no-ebpf", "node-name", "tcp-addr", "token-file", "admin-tls", "admin-auth-all",
		"node-ip", "pod-ip", "tls-san", "log-format", "guard", "guard-min-agreement", "guard-out-of-range", "guard-keep-urgent-ms", "guard-min-advantage",
		"max-conns", "max-conns-per-addr", "max-new-conns-per-addr", "max-streams-per-conn", "table-interval", "table-max-cells", "ablate"} {
		if !strings.Contains(help, "--"+name+" ") && !strings.Contains(help, "--"+name+"\n") {
			t.Errorf("help lacks --%s", name)
		}
		if !strings.Contains(help, envName(name)) {
			t.Errorf("help lacks %s", envName(name))
		}
	}
	if !strings.Contains(help, "default: :9090; env: TRIAGE_ADMIN_ADDR") {
		t.Errorf("admin-addr default not shown:\n%s", help)
	}
}

func TestAgentFlagsPrecedence(t *testing.T) {
	var cfg agent.Config
	fs, finish := agentFlags(&cfg)
	yaml := "quic-addr: \"127.0.0.1:5000\"\nadmin-addr: \":9999\"\ntoken: [aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb]\nexperience-max-bytes: 64MiB\nflamegraph-interval: 30s\n"
	env := map[string]string{"TRIAGE_ADMIN_ADDR": ":7777", "TRIAGE_CONFIG": "agent.yaml", "TRIAGE_NODE_NAME": "node-7"}
	err := parseFlagsFrom(fs, []string{"--flamegraph-interval", "5s"}, envOf(env), filesOf(map[string]string{"agent.yaml": yaml}))
	if err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if cfg.QUICAddr != "127.0.0.1:5000" || cfg.AdminAddr != ":7777" || cfg.NodeName != "node-7" || cfg.FlamegraphInterval != 5*time.Second {
		t.Fatalf("cfg %+v", cfg)
	}
	if len(cfg.Tokens) != 2 || cfg.Tokens[1] != "bbbbbbbbbbbbbbbb" || cfg.ExperienceOptions.MaxTotalBytes != 64<<20 {
		t.Fatalf("tokens %v, experience max %d", cfg.Tokens, cfg.ExperienceOptions.MaxTotalBytes)
	}
}

// --tcp-addr: auto (the default) follows --quic-addr, "" turns TCP off,
// anything else is the address; the node and pod addresses reach the
// self-signed certificate; --log-format picks the handler.
func TestAgentTransportAndTLSFlags(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		tcp     string
		disable bool
	}{
		{nil, "", false},
		{map[string]string{"TRIAGE_TCP_ADDR": ""}, "", true},
		{map[string]string{"TRIAGE_TCP_ADDR": "127.0.0.1:8443"}, "127.0.0.1:8443", false},
	} {
		var cfg agent.Config
		fs, finish := agentFlags(&cfg)
		if err := parseFlagsFrom(fs, nil, envOf(c.env), filesOf(nil)); err != nil {
			t.Fatal(err)
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		if cfg.TCPAddr != c.tcp || cfg.DisableTCP != c.disable {
			t.Errorf("env %v: TCPAddr %q DisableTCP %v, want %q %v", c.env, cfg.TCPAddr, cfg.DisableTCP, c.tcp, c.disable)
		}
	}
	var cfg agent.Config
	fs, finish := agentFlags(&cfg)
	env := map[string]string{"TRIAGE_NODE_IP": "10.0.0.7", "TRIAGE_POD_IP": "10.244.3.9", "TRIAGE_TOKEN_FILE": "/var/run/secrets/triage/token", "TRIAGE_LOG_FORMAT": "json"}
	if err := parseFlagsFrom(fs, []string{"--tls-san", "triage.example, 192.0.2.4"}, envOf(env), filesOf(nil)); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.CertHosts, " ") != "10.0.0.7 10.244.3.9 triage.example 192.0.2.4" || cfg.TokenFile != "/var/run/secrets/triage/token" {
		t.Errorf("CertHosts %v, TokenFile %q", cfg.CertHosts, cfg.TokenFile)
	}
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("triage agent serving", "quic", "127.0.0.1:4433")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "triage agent serving" || line["quic"] != "127.0.0.1:4433" {
		t.Errorf("json log line %q: %v", buf.String(), err)
	}
	if _, err := newLogger(&buf, "info", "xml"); err == nil {
		t.Error("--log-format xml accepted")
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "64KiB": 64 << 10, "16MiB": 16 << 20, "1GiB": 1 << 30, "10B": 10, " 2 MiB": 2 << 20} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1TB", "99999999999GiB"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

func TestAgentRejectsArguments(t *testing.T) {
	if err := runAgent([]string{"--admin-addr", "127.0.0.1:0", "stray"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Fatalf("err = %v", err)
	}
}

// The agent config shipped in deploy/ (the manifest's ConfigMap and the
// chart's values) must be accepted by `triage agent --config`: an unknown
// key would stop the agent from starting on every node.
func TestDeployConfigIsValidAgentConfig(t *testing.T) {
	manifest, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var configs []string
	for _, doc := range strings.Split(string(manifest), "\n---\n") {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cm); err == nil && cm.Kind == "ConfigMap" {
			configs = append(configs, cm.Data["agent.yaml"])
		}
	}
	values, err := os.ReadFile("../../deploy/helm/triage/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config map[string]any `json:"config"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		t.Fatal(err)
	}
	chartCfg, _ := yaml.Marshal(v.Config)
	configs = append(configs, string(chartCfg))
	if len(configs) != 2 {
		t.Fatalf("found %d agent configs, want the manifest's and the chart's", len(configs))
	}
	for i, c := range configs {
		var cfg agent.Config
		fs, finish := agentFlags(&cfg)
		err := parseFlagsFrom(fs, []string{"--config", "agent.yaml"}, envOf(nil), filesOf(map[string]string{"agent.yaml": c}))
		if err == nil {
			err = finish()
		}
		if err != nil {
			t.Fatalf("config %d rejected: %v\n%s", i, err, c)
		}
		if cfg.ExperienceDir != "/var/lib/triage/experience" {
			t.Fatalf("config %d: experience dir %q", i, cfg.ExperienceDir)
		}
	}
}

// --guard-min-agreement 0, --guard-keep-urgent-ms 0 and
// --guard-min-advantage 0 mean never on the command line (agent.Config
// reads 0 as the default);
// --guard-out-of-range=false keeps the model's decisions outside its
// training ranges.
func TestAgentGuardFlags(t *testing.T) {
	defaultAdvantage := float64(guard.DefaultMinAdvantage)
	if defaultAdvantage == 0 {
		defaultAdvantage = -1 // off by default: the flag's 0 is never
	}
	for _, c := range []struct {
		args        []string
		guard       string
		agreement   float64
		ignoreRange bool
		keepUrgent  float64
		advantage   float64
	}{
		{nil, agent.DefaultGuard, guard.DefaultMinAgreement, false, guard.DefaultKeepUrgentMs, defaultAdvantage},
		{[]string{"--guard", "gradient2", "--guard-min-agreement", "0.75", "--guard-keep-urgent-ms", "30", "--guard-min-advantage", "0.04"}, "gradient2", 0.75, false, 30, 0.04},
		{[]string{"--guard-min-agreement", "0", "--guard-out-of-range=false", "--guard-keep-urgent-ms", "0", "--guard-min-advantage", "0"}, agent.DefaultGuard, -1, true, -1, -1},
		{[]string{"--guard", "none"}, agent.GuardNone, guard.DefaultMinAgreement, false, guard.DefaultKeepUrgentMs, defaultAdvantage},
	} {
		var cfg agent.Config
		fs, finish := agentFlags(&cfg)
		if err := parseFlagsFrom(fs, c.args, envOf(nil), filesOf(nil)); err != nil {
			t.Fatal(err)
		}
		if err := finish(); err != nil {
			t.Fatal(err)
		}
		if cfg.Guard != c.guard || cfg.GuardMinAgreement != c.agreement || cfg.GuardIgnoreRange != c.ignoreRange || cfg.GuardKeepUrgentMs != c.keepUrgent ||
			cfg.GuardMinAdvantage != c.advantage {
			t.Errorf("%v: guard %q agreement %v ignore range %v keep urgent %v advantage %v, want %q %v %v %v %v", c.args, cfg.Guard, cfg.GuardMinAgreement,
				cfg.GuardIgnoreRange, cfg.GuardKeepUrgentMs, cfg.GuardMinAdvantage, c.guard, c.agreement, c.ignoreRange, c.keepUrgent, c.advantage)
		}
	}
}

// The chart's values show optional agent settings as commented-out keys
// of its config (workers, the connection limits): each one, uncommented,
// must be a config `triage agent` accepts, so that an operator who
// uncomments it does not stop the agent on every node.
func TestChartCommentedConfigKeysAreAgentFlags(t *testing.T) {
	values, err := os.ReadFile("../../deploy/helm/triage/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var examples []string
	inConfig := false
	for _, line := range strings.Split(string(values), "\n") {
		switch {
		case line == "config:":
			inConfig = true
			continue
		case line != "" && !strings.HasPrefix(line, " "):
			inConfig = false
		}
		// "  # workers: 8": a key and a value, not prose.
		body, ok := strings.CutPrefix(line, "  # ")
		if key, value, kv := strings.Cut(body, ": "); inConfig && ok && kv && value != "" && !strings.ContainsAny(key, " .") {
			examples = append(examples, body)
		}
	}
	if len(examples) < 5 {
		t.Fatalf("found %d commented-out config examples in values.yaml (%q), want workers and the four connection limits", len(examples), examples)
	}
	for _, ex := range examples {
		var cfg agent.Config
		fs, finish := agentFlags(&cfg)
		err := parseFlagsFrom(fs, []string{"--config", "agent.yaml"}, envOf(nil), filesOf(map[string]string{"agent.yaml": ex + "\n"}))
		if err == nil {
			err = finish()
		}
		if err != nil {
			t.Errorf("values.yaml example %q: %v", ex, err)
		}
	}
}

// --ablate kernel makes the agent blind to the kernel; nothing else is an
// ablation, and the default sees.
func TestAgentAblateFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
		err  bool
	}{{nil, false, false}, {[]string{"--ablate", "kernel"}, true, false}, {[]string{"--ablate", "queue"}, false, true}} {
		var cfg agent.Config
		fs, finish := agentFlags(&cfg)
		if err := parseFlagsFrom(fs, c.args, envOf(nil), filesOf(nil)); err != nil {
			t.Fatal(err)
		}
		err := finish()
		if (err != nil) != c.err || err != nil && !strings.Contains(err.Error(), "--ablate") {
			t.Errorf("%q: %v, want an error naming --ablate: %v", c.args, err, c.err)
		}
		if cfg.AblateKernel != c.want {
			t.Errorf("%q: AblateKernel %v, want %v", c.args, cfg.AblateKernel, c.want)
		}
	}
}
