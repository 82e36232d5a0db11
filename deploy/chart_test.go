package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/triage-agent/triage/internal/testenv"
)

// The Prometheus Operator objects and the dashboard: a ServiceMonitor that
// selects the headless Service of the agent's pods on the admin port, the
// alert rules of files/alerts.yaml verbatim, the dashboard JSON verbatim.
func TestChartMonitoring(t *testing.T) {
	on := map[string]any{"enabled": true}
	m := decodeDocs(t, renderChart(t, map[string]any{
		"serviceMonitor":   map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus"}},
		"prometheusRule":   on,
		"grafanaDashboard": on,
	}))
	if m.svc == nil || m.sm == nil || m.pr == nil || m.dashboard == nil {
		t.Fatalf("want a Service, a ServiceMonitor, a PrometheusRule and a dashboard ConfigMap (%d documents)", m.all)
	}
	// The Service selects the DaemonSet's pods and names the admin port.
	pod := m.ds.Spec.Template.Labels
	for k, v := range m.svc.Spec.Selector {
		if pod[k] != v {
			t.Errorf("Service selector %s=%s does not match the pods %v", k, v, pod)
		}
	}
	if m.svc.Spec.ClusterIP != "None" || len(m.svc.Spec.Ports) != 1 || m.svc.Spec.Ports[0].Name != "admin" || m.svc.Spec.Ports[0].TargetPort.String() != "admin" {
		t.Errorf("Service %+v", m.svc.Spec)
	}
	// The ServiceMonitor selects that Service and scrapes its admin port.
	spec := m.sm["spec"].(map[string]any)
	sel := spec["selector"].(map[string]any)["matchLabels"].(map[string]any)
	for k, v := range sel {
		if m.svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v, the Service has %v", k, v, m.svc.Labels)
		}
	}
	ep := spec["endpoints"].([]any)[0].(map[string]any)
	if ep["port"] != "admin" || ep["path"] != "/metrics" || ep["interval"] != "30s" {
		t.Errorf("ServiceMonitor endpoint %v", ep)
	}
	if m.sm["metadata"].(map[string]any)["labels"].(map[string]any)["release"] != "kube-prometheus" {
		t.Error("serviceMonitor.labels not rendered")
	}
	// The rules are the file's.
	data, err := os.ReadFile(filepath.Join("helm", "triage", "files", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.pr["spec"], file) {
		t.Errorf("PrometheusRule spec differs from files/alerts.yaml")
	}
	var dash, want map[string]any
	b, _ := os.ReadFile(filepath.Join("helm", "triage", "files", "dashboard.json"))
	json.Unmarshal(b, &want)
	if err := json.Unmarshal([]byte(m.dashboard.Data["triage-agent.json"]), &dash); err != nil || !reflect.DeepEqual(dash, want) || m.dashboard.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap: %v", err)
	}
	for _, obj := range []map[string]any{m.sm, m.pr} {
		if ns := obj["metadata"].(map[string]any)["namespace"]; ns != m.ds.Namespace {
			t.Errorf("%v in namespace %v, the agent in %s", obj["kind"], ns, m.ds.Namespace)
		}
	}
}

// TLS from a cert-manager Secret, mutual TLS, the TCP port off, the admin
// port on TLS, the namespace left to the release: each option reaches the
// pod and the agent's config consistently.
func TestChartOptions(t *testing.T) {
	m := decodeDocs(t, renderChart(t, map[string]any{
		"tls":       map[string]any{"secretName": "triage-tls", "clientCA": true},
		"tcp":       map[string]any{"enabled": false},
		"admin":     map[string]any{"tls": true},
		"namespace": map[string]any{"create": false},
	}))
	for _, p := range checkDaemonSet(m.ds, m.cm) {
		t.Error(p)
	}
	if m.ns != nil || m.ds.Namespace != "triage" {
		t.Errorf("namespace.create=false: Namespace rendered %v, DaemonSet in %q (want the release's)", m.ns != nil, m.ds.Namespace)
	}
	spec := m.ds.Spec.Template.Spec
	c := spec.Containers[0]
	cfg := map[string]any{}
	yaml.Unmarshal([]byte(m.cm.Data["agent.yaml"]), &cfg)
	for _, key := range []string{"tls-cert", "tls-key", "client-ca"} {
		path, _ := cfg[key].(string)
		if !mountedFromSecret(spec, c, path) {
			t.Errorf("%s %q is not a file of a mounted Secret", key, path)
		}
	}
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "triage-tls" })
	if i < 0 {
		t.Error("the TLS Secret is not a volume")
	}
	if cfg["tcp-addr"] != "" || slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "api" }) {
		t.Errorf("tcp.enabled=false: tcp-addr %v, ports %v", cfg["tcp-addr"], c.Ports)
	}
	if cfg["admin-tls"] != true || c.LivenessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || c.ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
		t.Errorf("admin.tls: config %v, probes %v %v", cfg["admin-tls"], c.LivenessProbe.HTTPGet.Scheme, c.ReadinessProbe.HTTPGet.Scheme)
	}
	if _, err := renderChartFiles(map[string]any{"tls": map[string]any{"clientCA": true}}); err == nil || !strings.Contains(err.Error(), "tls.clientCA needs tls.secretName") {
		t.Errorf("clientCA without a Secret: %v", err)
	}
}

// values.schema.json refuses what the chart cannot use, with Helm's error.
func TestChartValuesSchema(t *testing.T) {
	for name, v := range map[string]map[string]any{
		"port not a number":      {"quicPort": "4433"},
		"port out of range":      {"adminPort": 70000},
		"unknown key":            {"quicport": 4433},
		"pull policy":            {"image": map[string]any{"pullPolicy": "Sometimes"}},
		"config sets the ports":  {"config": map[string]any{"quic-addr": ":1"}},
		"config sets the token":  {"config": map[string]any{"token": "0123456789abcdef0123"}},
		"namespace not a name":   {"namespace": map[string]any{"name": "Triage_NS"}},
		"seccomp profile":        {"seccompProfile": "Off"},
		"interval not duration":  {"serviceMonitor": map[string]any{"interval": "often"}},
		"host dir not absolute":  {"hostStateDir": "var/lib/triage"},
		"capability lower case":  {"capabilities": []any{"bpf"}},
		"unknown tls option":     {"tls": map[string]any{"secret": "x"}},
		"tcp enabled not a bool": {"tcp": map[string]any{"enabled": "yes"}},
	} {
		_, err := renderChartFiles(v)
		if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
			t.Errorf("%s: %v, want the schema to refuse it", name, err)
		}
	}
}

// NOTES.txt renders, with the namespace, ports and how to get the token in.
func TestChartNotes(t *testing.T) {
	out, err := renderChartFiles(nil)
	if err != nil {
		t.Fatal(err)
	}
	notes := out["triage/templates/NOTES.txt"]
	for _, want := range []string{"namespace triage", "UDP 4433", "TCP 4433", "create secret generic triage-agent", "fingerprint", "/v1/decide"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
}

// The alert rules pass promtool's checks and its unit tests
// (deploy/prometheus/alerts_test.yaml).
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool not installed (Debian package prometheus)")
	}
	if out, err := exec.Command(promtool, "check", "rules", filepath.Join("helm", "triage", "files", "alerts.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yaml")
	cmd.Dir = "prometheus"
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	// Every alert of the file has a test case.
	rules, _ := os.ReadFile(filepath.Join("helm", "triage", "files", "alerts.yaml"))
	tests, _ := os.ReadFile(filepath.Join("prometheus", "alerts_test.yaml"))
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	yaml.Unmarshal(rules, &rf)
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
				t.Errorf("alert %s has no promtool test case", r.Alert)
			}
		}
	}
}
