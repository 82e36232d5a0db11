package agent

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/triage-agent/triage/agent/serve"
	"github.com/triage-agent/triage/client"
	"github.com/triage-agent/triage/experience"
	"github.com/triage-agent/triage/internal/testenv"
	"github.com/triage-agent/triage/wire"
)

// Clients nobody here wrote, on the agent's TCP port with string task ids:
// Debian's curl over HTTP/1.1 and HTTP/2, the standard-library Python
// example, and a gRPC client; then the outcomes they reported are in the
// experience log under their string ids.
func TestForeignClientsDecideOverTCP(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, fp := writeCert(t, dir)
	const tok = "clients-token-0123456789abcdef"
	expDir := filepath.Join(dir, "experience")
	ta := startAgent(t, Config{TLSCertFile: certFile, TLSKeyFile: keyFile, Tokens: []string{tok}, ExperienceDir: expDir, NoEBPF: true})
	tcp := ta.TCPAddr().String()
	_, port, _ := strings.Cut(tcp, ":")
	var ids []string

	t.Run("curl", func(t *testing.T) {
		curl, err := exec.LookPath("curl")
		if err != nil {
			testenv.Unavailable(t, "curl not installed")
		}
		for _, c := range []struct{ flag, proto string }{{"--http1.1", "1.1"}, {"--http2", "2"}} {
			id := "curl-" + c.proto + "-6f1d2c3b-aaaa-4bbb-8ccc-123456789abc"
			body := `{"tasks":[{"id":"` + id + `","class":"scoring","sla_ms":200,"cost_ms":15,"tenant":"shop"}]}`
			// --resolve: the certificate names localhost.
			out, err := exec.Command(curl, "-sS", c.flag, "--cacert", certFile, "--resolve", "localhost:"+port+":127.0.0.1",
				"-H", "Authorization: Bearer "+tok, "-H", "Content-Type: application/json", "-d", body,
				"-w", "\n%{http_version} %{http_code}", "https://localhost:"+port+"/v1/decide").CombinedOutput()
			if err != nil {
				t.Fatalf("curl %s: %v\n%s", c.flag, err, out)
			}
			text := strings.TrimSpace(string(out))
			cut := strings.LastIndexByte(text, '\n')
			if cut < 0 {
				t.Fatalf("curl %s: %q", c.flag, text)
			}
			answer, status := strings.TrimSpace(text[:cut]), text[cut+1:]
			if status != c.proto+" 200" {
				t.Fatalf("curl %s: %q (want HTTP/%s 200)\n%s", c.flag, status, c.proto, answer)
			}
			var resp wire.DecideResponseJSON
			if err := json.Unmarshal([]byte(answer), &resp); err != nil || len(resp.Decisions) != 1 || resp.Decisions[0].ID != wire.StringID(id) {
				t.Fatalf("curl %s: answer %s (%v)", c.flag, answer, err)
			}
			out, err = exec.Command(curl, "-sS", c.flag, "--cacert", certFile, "--resolve", "localhost:"+port+":127.0.0.1",
				"-H", "Authorization: Bearer "+tok, "--json", `{"outcomes":[{"id":"`+id+`","latency_ms":30,"service_ms":15,"sla_met":true}]}`,
				"https://localhost:"+port+"/v1/outcomes").CombinedOutput()
			if err != nil || !strings.Contains(string(out), `"accepted":1`) {
				t.Fatalf("curl %s outcomes: %v %s", c.flag, err, out)
			}
			ids = append(ids, id)
		}
	})

	t.Run("python", func(t *testing.T) {
		py, err := exec.LookPath("python3")
		if err != nil {
			testenv.Unavailable(t, "python3 not installed")
		}
		script := filepath.Join("..", "examples", "python", "triage_client.py")
		for _, trust := range [][]string{{"--pin-sha256", fp}, {"--cafile", certFile}} {
			id := "py-" + strings.TrimPrefix(trust[0], "--") + "-0001"
			args := append([]string{script, "--addr", "localhost:" + port, "--task", id + ":scoring:200:15", "--report"}, trust...)
			cmd := exec.Command(py, args...)
			cmd.Env = append(os.Environ(), "TRIAGE_TOKEN="+tok, "PYTHONDONTWRITEBYTECODE=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python %v: %v\n%s", trust[0], err, out)
			}
			var res struct {
				Decide   wire.DecideResponseJSON `json:"decide"`
				Accepted int                     `json:"accepted"`
			}
			if err := json.Unmarshal(out, &res); err != nil || len(res.Decide.Decisions) != 1 || res.Decide.Decisions[0].ID != wire.StringID(id) || res.Accepted != 1 {
				t.Fatalf("python %v: %s (%v)", trust[0], out, err)
			}
			ids = append(ids, id)
		}
		// A wrong pin stops the client before it sends the token.
		cmd := exec.Command(py, script, "--addr", "localhost:"+port, "--task", "x:c:1:1", "--pin-sha256", strings.Repeat("ab", 32))
		cmd.Env = append(os.Environ(), "TRIAGE_TOKEN="+tok)
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "does not match the pin") {
			t.Fatalf("python with a wrong pin: %v\n%s", err, out)
		}
	})

	t.Run("grpc", func(t *testing.T) {
		ccfg := client.Config{PinSHA256: fp}
		cc, err := grpc.NewClient("passthrough:///"+tcp, grpc.WithTransportCredentials(credentials.NewTLS(ccfg.TLSConfig("localhost", "h2"))))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		id := "grpc-4c3b2a19"
		resp := new(wire.DecideResponse)
		if err := cc.Invoke(ctx, serve.GRPCDecideMethod, &wire.DecideRequest{ReqId: 1, Tasks: []*wire.Task{{TaskId: id, Class: "scoring", SlaMs: 200, CostMs: 15}}}, resp); err != nil {
			t.Fatal(err)
		}
		if resp.GetDecisions()[0].GetTaskId() != id || resp.GetModel() != ta.ModelVersion() {
			t.Fatalf("gRPC answer %v", resp)
		}
		acc := new(wire.OutcomeAccepted)
		if err := cc.Invoke(ctx, serve.GRPCOutcomesMethod, &wire.OutcomeReport{Outcomes: []*wire.Outcome{{TaskId: id, LatencyMs: 30, ServiceMs: 15, SlaMet: true}}}, acc); err != nil || acc.GetAccepted() != 1 {
			t.Fatalf("gRPC outcomes: %v %v", acc, err)
		}
		ids = append(ids, id)
	})

	// Every one of those outcomes matched its decision by the string id.
	if got := ta.metric(t, "triage_outcomes_unknown_total"); got != 0 {
		t.Errorf("%v outcomes did not match a decision", got)
	}
	ta.stop()
	var logged []string
	if err := experience.ReadDir(expDir, func(r experience.Record) error { logged = append(logged, r.TaskID); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(logged)
	slices.Sort(ids)
	if !slices.Equal(logged, ids) {
		t.Errorf("experience log holds %q, want %q", logged, ids)
	}
}
