package main

import (
	"errors"
	"testing"

	"github.com/triage-agent/triage/agent"
)

// FuzzAgentConfigFile: the YAML file of `triage agent --config`, whatever
// its bytes, either sets the agent's flags or is refused with
// ErrBadConfig naming the file (or with a flag's own error for a value of
// the wrong form, naming the key), never a panic. A file that is accepted
// reads the same the second time.
func FuzzAgentConfigFile(f *testing.F) {
	for _, s := range []string{
		// The DaemonSet's ConfigMap (deploy/daemonset.yaml).
		"quic-addr: \":4433\"\nadmin-addr: \":9090\"\ntoken-file: /run/secrets/triage/token\nlog-format: json\ndevice: auto\n" +
			"experience-dir: /var/lib/triage/experience\nflamegraph-dir: /var/lib/triage/flamegraphs\nflamegraph-interval: 1m\n",
		"token: [aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb]\nexperience-max-bytes: 64MiB\nworkers: 8\n",
		"guard: none\nguard-min-agreement: 0.5\nno-ebpf: true\n",
		"quic_addr: 127.0.0.1:5000\n",
		"no-such-flag: 1\n",
		"workers: [1, [2]]\n",
		"- a\n- b\n",
		"{",
		"config: other.yaml\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parse := func() (agent.Config, error) {
			var cfg agent.Config
			fs, _ := agentFlags(&cfg)
			fs.SetOutput(discard{})
			err := parseFlagsFrom(fs, []string{"--config", "agent.yaml"}, envOf(nil), filesOf(map[string]string{"agent.yaml": string(data)}))
			return cfg, err
		}
		cfg, err := parse()
		if err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		again, err := parse()
		if err != nil {
			t.Fatalf("accepted once, refused the second time: %v", err)
		}
		if cfg.QUICAddr != again.QUICAddr || cfg.Workers != again.Workers || cfg.ModelPath != again.ModelPath {
			t.Fatalf("two reads differ: %+v, %+v", cfg, again)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
