package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The capabilities docs/deploy.md explains, and no other.
var wantCaps = []corev1.Capability{"BPF", "PERFMON", "SYS_RESOURCE", "SYS_PTRACE", "SYSLOG"}

// The host paths the agent reads (and the one it writes: its state dir).
var wantHostPaths = map[string]bool{ // path -> mounted read-only
	"/sys/kernel/btf":     true,
	"/sys/kernel/tracing": true,
	"/sys/fs/cgroup":      true,
	"/var/lib/triage":     false,
}

type manifests struct {
	ds  *appsv1.DaemonSet
	cm  *corev1.ConfigMap // the agent's config
	ns  *corev1.Namespace
	svc *corev1.Service
	// The Prometheus Operator's kinds, whose Go types are not a dependency:
	// decoded as maps and checked field by field.
	sm, pr    map[string]any
	dashboard *corev1.ConfigMap
	all       int
}

// decodeDocs splits a multi-document YAML stream and decodes each document
// strictly (an unknown or misspelt field is an error) into its API type.
func decodeDocs(t *testing.T, data []byte) manifests {
	t.Helper()
	var m manifests
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("reading kind: %v\n%s", err, doc)
		}
		var target any
		switch head.Kind {
		case "DaemonSet":
			m.ds = &appsv1.DaemonSet{}
			target = m.ds
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if strings.Contains(doc, "triage-agent.json") {
				m.dashboard = cm
			} else {
				m.cm = cm
			}
			target = cm
		case "Namespace":
			m.ns = &corev1.Namespace{}
			target = m.ns
		case "Service":
			m.svc = &corev1.Service{}
			target = m.svc
		case "ServiceMonitor", "PrometheusRule":
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("decoding %s: %v", head.Kind, err)
			}
			if obj["apiVersion"] != "monitoring.coreos.com/v1" {
				t.Fatalf("%s apiVersion %v", head.Kind, obj["apiVersion"])
			}
			if head.Kind == "ServiceMonitor" {
				m.sm = obj
			} else {
				m.pr = obj
			}
			m.all++
			continue
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), target); err != nil {
			t.Fatalf("strict decoding %s: %v", head.Kind, err)
		}
		m.all++
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func TestDaemonSetManifest(t *testing.T) {
	data, err := os.ReadFile("daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkAgentDocs(t, "daemonset.yaml", decodeDocs(t, data))
}

// checkAgentDocs wants the agent's Namespace, ConfigMap and DaemonSet among
// m (from what) and reports every problem checkDaemonSet and checkNamespace
// find in them.
func checkAgentDocs(t *testing.T, what string, m manifests) {
	t.Helper()
	if m.ds == nil || m.cm == nil || m.ns == nil {
		t.Fatalf("%s: want a Namespace, a ConfigMap and a DaemonSet, got %d documents", what, m.all)
	}
	for _, p := range checkDaemonSet(m.ds, m.cm) {
		t.Error(p)
	}
	for _, p := range checkNamespace(m.ns, m.ds) {
		t.Error(p)
	}
}

// checkNamespace: the agent's namespace admits privileged pods (hostPID,
// hostPath and the capabilities are refused by baseline and restricted).
func checkNamespace(ns *corev1.Namespace, ds *appsv1.DaemonSet) (problems []string) {
	if ns.Name != ds.Namespace {
		problems = append(problems, fmt.Sprintf("Namespace %s, DaemonSet in %s", ns.Name, ds.Namespace))
	}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		if v := ns.Labels["pod-security.kubernetes.io/"+mode]; v != "privileged" {
			problems = append(problems, fmt.Sprintf("namespace label pod-security.kubernetes.io/%s = %q, want privileged", mode, v))
		}
	}
	return problems
}

func checkDaemonSet(ds *appsv1.DaemonSet, cm *corev1.ConfigMap) (problems []string) {
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		bad("%d containers, want 1", len(spec.Containers))
		return problems
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		bad("no securityContext.capabilities")
		return problems
	}
	if sc.Privileged != nil && *sc.Privileged {
		bad("privileged: true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		bad("allowPrivilegeEscalation must be false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		bad("readOnlyRootFilesystem must be true")
	}
	if !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		bad("capabilities.drop = %v, want [ALL]", sc.Capabilities.Drop)
	}
	got := slices.Clone(sc.Capabilities.Add)
	slices.Sort(got)
	want := slices.Clone(wantCaps)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		bad("capabilities.add = %v, want exactly %v", sc.Capabilities.Add, wantCaps)
	}
	if !spec.HostPID {
		bad("hostPID is documented as needed but not set")
	}
	if spec.HostNetwork || spec.HostIPC {
		bad("hostNetwork/hostIPC are not needed")
	}

	// Probes on the admin port, which must be the port the config listens on.
	adminPort := int32(-1)
	for _, p := range c.Ports {
		if p.Name == "admin" {
			adminPort = p.ContainerPort
		}
	}
	if adminPort < 0 {
		bad("no port named admin")
		return problems
	}
	for name, pr := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			bad("probe for %s missing", name)
			continue
		}
		if pr.HTTPGet.Path != name || pr.HTTPGet.Port.String() != "admin" {
			bad("probe %s -> %s on %s, want %s on admin", name, pr.HTTPGet.Path, pr.HTTPGet.Port.String(), name)
		}
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data["agent.yaml"]), &cfg); err != nil {
		bad("config agent.yaml: %v", err)
		return problems
	}
	if cfg["admin-addr"] != fmt.Sprintf(":%d", adminPort) {
		bad("config admin-addr %v, but the admin port is %d", cfg["admin-addr"], adminPort)
	}
	// QUIC on UDP and, unless turned off, the API on TCP of the same
	// number, both on the node's address.
	quicPort := int32(-1)
	for _, p := range c.Ports {
		if p.Name == "quic" && p.Protocol == corev1.ProtocolUDP && p.HostPort == p.ContainerPort {
			quicPort = p.ContainerPort
		}
	}
	if cfg["quic-addr"] != fmt.Sprintf(":%d", quicPort) {
		bad("config quic-addr %v, but the quic port is %d", cfg["quic-addr"], quicPort)
	}
	api := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "api" })
	if tcpOff := cfg["tcp-addr"] == ""; tcpOff != (api < 0) {
		bad("config tcp-addr %v but port api present: %v", cfg["tcp-addr"], api >= 0)
	} else if api >= 0 && (c.Ports[api].Protocol != corev1.ProtocolTCP || c.Ports[api].ContainerPort != quicPort || c.Ports[api].HostPort != quicPort) {
		bad("port api %+v: want TCP %d on the host, the QUIC port's number", c.Ports[api], quicPort)
	}
	// The token comes from a file of a mounted Secret.
	tokenFile, _ := cfg["token-file"].(string)
	if !mountedFromSecret(spec, c, tokenFile) {
		bad("config token-file %q is not a file of a mounted Secret", tokenFile)
	}

	// Limits and requests.
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim, ok := c.Resources.Limits[res]
		if !ok || lim.IsZero() {
			bad("no %s limit", res)
			continue
		}
		if req, ok := c.Resources.Requests[res]; !ok || req.Cmp(lim) > 0 {
			bad("%s request %v missing or above limit %v", res, req.String(), lim.String())
		}
	}

	// NODE_NAME from the downward API.
	var nodeName *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "TRIAGE_NODE_NAME" {
			nodeName = &c.Env[i]
		}
	}
	if nodeName == nil || nodeName.ValueFrom == nil || nodeName.ValueFrom.FieldRef == nil || nodeName.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		bad("TRIAGE_NODE_NAME must come from fieldRef spec.nodeName, got %+v", nodeName)
	}
	// The addresses clients dial, for the self-signed certificate's names;
	// and no token in the environment (/proc/PID/environ shows it).
	for name, field := range map[string]string{"TRIAGE_NODE_IP": "status.hostIP", "TRIAGE_POD_IP": "status.podIP"} {
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != field {
			bad("%s must come from fieldRef %s", name, field)
		}
	}
	for _, e := range c.Env {
		if e.Name == "TRIAGE_TOKEN" {
			bad("TRIAGE_TOKEN in the environment: mount the Secret and use token-file")
		}
	}
	if spec.NodeSelector["kubernetes.io/os"] != "linux" {
		bad("nodeSelector %v lacks kubernetes.io/os: linux (eBPF)", spec.NodeSelector)
	}

	// The image runs `triage agent` with its config file from the ConfigMap.
	if len(c.Args) == 0 || c.Args[0] != "agent" {
		bad("args = %v, want the agent subcommand first", c.Args)
	}
	var configPath string
	for _, a := range c.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			configPath = v
		}
	}
	mounted := false
	for _, vm := range c.VolumeMounts {
		if filepath.Join(vm.MountPath, "agent.yaml") == configPath {
			for _, v := range spec.Volumes {
				if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
					mounted = true
				}
			}
		}
	}
	if !mounted {
		bad("--config=%q is not the agent.yaml of ConfigMap %s mounted in the container", configPath, cm.Name)
	}

	// Host paths: exactly the documented ones, read-only but the state dir.
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm
	}
	seen := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		ro, ok := wantHostPaths[v.HostPath.Path]
		if !ok {
			bad("undocumented host path %s", v.HostPath.Path)
			continue
		}
		seen[v.HostPath.Path] = true
		if mounts[v.Name].ReadOnly != ro {
			bad("host path %s mounted readOnly=%v, want %v", v.HostPath.Path, mounts[v.Name].ReadOnly, ro)
		}
	}
	for p := range wantHostPaths {
		if !seen[p] {
			bad("host path %s missing", p)
		}
	}
	return problems
}

// mountedFromSecret reports whether path lies in a Secret volume mounted
// in c.
func mountedFromSecret(spec corev1.PodSpec, c corev1.Container, path string) bool {
	if path == "" {
		return false
	}
	for _, vm := range c.VolumeMounts {
		if filepath.Dir(path) != vm.MountPath {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == vm.Name && v.Secret != nil {
				return true
			}
		}
	}
	return false
}

// renderChart renders the chart with Helm's own engine (helm.sh/helm/v4:
// the loader, the values coalesced with values.yaml and checked against
// values.schema.json, Sprig and include/tpl, strict about missing keys), as
// `helm template triage deploy/helm/triage -n triage` would, and returns
// the manifests in file order (NOTES.txt and the partials left out).
func renderChart(t *testing.T, overrides map[string]any) []byte {
	t.Helper()
	out, err := renderChartFiles(overrides)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(out))
	for name := range out {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatal("no templates")
	}
	slices.Sort(names)
	var buf bytes.Buffer
	for _, name := range names {
		buf.WriteString("---\n# Source: " + name + "\n" + out[name] + "\n")
	}
	return buf.Bytes()
}

// renderChartFiles is every rendered file of the chart, by path.
func renderChartFiles(overrides map[string]any) (map[string]string, error) {
	ch, err := loader.LoadDir(filepath.Join("helm", "triage"))
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(ch, overrides, chartcommon.ReleaseOptions{Name: "triage", Namespace: "triage", IsInstall: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	out, err := engine.Engine{Strict: true}.RenderWithContext(context.Background(), ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering: %w", err)
	}
	return out, nil
}

// The chart with its default values renders the same pod as the plain
// manifest, and passes the same checks.
func TestHelmChartMatchesManifest(t *testing.T) {
	rendered := decodeDocs(t, renderChart(t, nil))
	checkAgentDocs(t, "the chart", rendered)

	data, _ := os.ReadFile("daemonset.yaml")
	plain := decodeDocs(t, data)
	ps, rs := plain.ds.Spec.Template.Spec, rendered.ds.Spec.Template.Spec
	if !reflect.DeepEqual(ps.Containers, rs.Containers) {
		t.Errorf("containers differ:\nmanifest %+v\nchart    %+v", ps.Containers, rs.Containers)
	}
	if !reflect.DeepEqual(ps.Volumes, rs.Volumes) {
		t.Errorf("volumes differ:\nmanifest %+v\nchart    %+v", ps.Volumes, rs.Volumes)
	}
	if !reflect.DeepEqual(ps.Tolerations, rs.Tolerations) || ps.HostPID != rs.HostPID || !reflect.DeepEqual(ps.NodeSelector, rs.NodeSelector) {
		t.Error("tolerations, nodeSelector or hostPID differ between manifest and chart")
	}
	if !reflect.DeepEqual(plain.ns.Labels["pod-security.kubernetes.io/enforce"], rendered.ns.Labels["pod-security.kubernetes.io/enforce"]) {
		t.Error("namespace pod-security labels differ")
	}
	pc, rc := map[string]any{}, map[string]any{}
	yaml.Unmarshal([]byte(plain.cm.Data["agent.yaml"]), &pc)
	yaml.Unmarshal([]byte(rendered.cm.Data["agent.yaml"]), &rc)
	if !reflect.DeepEqual(pc, rc) {
		t.Errorf("agent config differs:\nmanifest %v\nchart    %v", pc, rc)
	}
}

// A value the operator changes reaches the pod, and a capability list that
// adds SYS_ADMIN fails the check (so the check can fail).
func TestHelmValuesReachThePod(t *testing.T) {
	r := decodeDocs(t, renderChart(t, map[string]any{"adminPort": 9191}))
	c := r.ds.Spec.Template.Spec.Containers[0]
	if c.Ports[1].ContainerPort != 9191 || !strings.Contains(r.cm.Data["agent.yaml"], `admin-addr: ":9191"`) {
		t.Fatalf("adminPort override not rendered: %+v\n%s", c.Ports, r.cm.Data["agent.yaml"])
	}
	bad := decodeDocs(t, renderChart(t, map[string]any{"capabilities": []any{"BPF", "PERFMON", "SYS_RESOURCE", "SYS_PTRACE", "SYSLOG", "SYS_ADMIN"}}))
	problems := checkDaemonSet(bad.ds, bad.cm)
	if len(problems) != 1 || !strings.Contains(problems[0], "SYS_ADMIN") {
		t.Fatalf("a chart adding SYS_ADMIN must fail exactly the capability check, got %q", problems)
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	froms := regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1)
	if len(froms) < 2 {
		t.Errorf("want a multi-stage build, got %d FROM lines", len(froms))
	}
	for _, want := range []string{
		"scripts/fetch-onnxruntime.sh",
		"COPY --from=build /out/lib/libonnxruntime.so.1 /usr/lib/triage/libonnxruntime.so.1",
		"ENV TRIAGE_ONNXRUNTIME_LIB=/usr/lib/triage/libonnxruntime.so.1",
		`ENTRYPOINT ["/usr/bin/triage"]`,
		"CGO_ENABLED=1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// The manifest's image runs the Dockerfile's entrypoint with the agent subcommand.
	if !strings.Contains(text, `CMD ["agent"]`) {
		t.Error(`Dockerfile's default command is not ["agent"]`)
	}
}
