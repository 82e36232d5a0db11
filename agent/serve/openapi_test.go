package serve_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/triage-agent/triage/agent/serve"
)

// openAPI is the document the server serves, with a JSON Schema compiler
// over it (OpenAPI 3.1 schemas are JSON Schema 2020-12).
type openAPI struct {
	doc   map[string]any
	comp  *jsonschema.Compiler
	cache map[string]*jsonschema.Schema
}

func loadOpenAPI(t *testing.T, body []byte) *openAPI {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the served document is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	return &openAPI{doc: doc.(map[string]any), comp: c, cache: map[string]*jsonschema.Schema{}}
}

func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// responseSchema compiles the schema of path's method's answer with status.
func (o *openAPI) responseSchema(t *testing.T, path, method string, status int) *jsonschema.Schema {
	t.Helper()
	op, ok := o.doc["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		t.Fatalf("the document has no %s %s", method, path)
	}
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if !ok {
		t.Fatalf("the document has no %d answer for %s %s, the server gives one", status, method, path)
	}
	ptr := "#/paths/" + escapePtr(path) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(status)
	if ref, ok := resp["$ref"].(string); ok {
		ptr = ref
	}
	return o.compile(t, ptr+"/content/application~1json/schema")
}

func (o *openAPI) requestSchema(t *testing.T, path, method string) *jsonschema.Schema {
	return o.compile(t, "#/paths/"+escapePtr(path)+"/"+strings.ToLower(method)+"/requestBody/content/application~1json/schema")
}

func (o *openAPI) compile(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	if s := o.cache[ptr]; s != nil {
		return s
	}
	s, err := o.comp.Compile("mem://openapi.json" + ptr)
	if err != nil {
		t.Fatalf("compiling %s: %v", ptr, err)
	}
	o.cache[ptr] = s
	return s
}

func validate(s *jsonschema.Schema, body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}

// The OpenAPI document served at GET /v1/openapi.json describes the live
// server: its routes are the server's, every request the server takes fits
// the request schema and every one the schema refuses the server refuses,
// and every answer (success and error) fits the schema of its status.
func TestOpenAPIMatchesLiveServer(t *testing.T) {
	b, _ := goBackend()
	ts := startServer(t, serve.Config{MaxBatch: 1024}, b)
	hc := tcpJSONClient(t, ts, true)
	do := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, tcpURL(ts, path), strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	code, body := do("GET", "/v1/openapi.json", "")
	if code != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %s", code, body)
	}
	api := loadOpenAPI(t, body)
	if v, _ := api.doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi %q, want 3.x", v)
	}
	if err := validate(api.responseSchema(t, "/v1/openapi.json", "GET", 200), body); err != nil {
		t.Errorf("the document does not fit its own answer schema: %v", err)
	}

	// The routes: the server's 404 names what it has; the document must
	// list exactly those.
	_, body = do("GET", "/no/such/route", "")
	var served []string
	for _, m := range regexp.MustCompile(`(GET|POST) (/v1/[a-z.]+)`).FindAllStringSubmatch(string(body), -1) {
		served = append(served, m[1]+" "+m[2])
	}
	var documented []string
	for path, ops := range api.doc["paths"].(map[string]any) {
		for m := range ops.(map[string]any) {
			documented = append(documented, strings.ToUpper(m)+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if len(served) == 0 || !slices.Equal(served, documented) {
		t.Errorf("server routes %v, document %v", served, documented)
	}

	cases := []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/decide", `{"tasks":[{"id":"c0ffee-1","class":"interactive","sla_ms":20,"cost_ms":2,"tenant":"a"},{"id":18446744073709551615,"sla_ms":900}]}`, 200},
		{"POST", "/v1/decide", `{"tasks":[{"id":"` + strings.Repeat("z", 128) + `"}]}`, 200},
		{"POST", "/v1/decide", `{"tasks":[]}`, 400},
		{"POST", "/v1/decide", `{"tasks":[{"id":""}]}`, 400},
		{"POST", "/v1/decide", `{"tasks":[{"id":"` + strings.Repeat("z", 129) + `"}]}`, 400},
		{"POST", "/v1/decide", `{"tasks":[{"id":-3}]}`, 400},
		{"POST", "/v1/decide", `{"tasks":[{"id":1,"priority":4}]}`, 400},
		{"POST", "/v1/decide", `{"tasks":[{"sla_ms":4}]}`, 400},
		{"POST", "/v1/decide", `{"tasks":[` + strings.Repeat(`{"id":1},`, 1024) + `{"id":2}]}`, 413},
		{"GET", "/v1/decide", "", 405},
		{"POST", "/v1/outcomes", `{"outcomes":[{"id":"c0ffee-1","latency_ms":3.5,"service_ms":2,"sla_met":true}]}`, 200},
		{"POST", "/v1/outcomes", `{"outcomes":[{"id":"c0ffee-1"}]}`, 200}, // latency_ms absent is 0
		{"POST", "/v1/outcomes", `{"outcomes":[{"latency_ms":1}]}`, 400},
		{"GET", "/v1/state", "", 200},
		{"POST", "/v1/state", "", 405},
	}
	for _, c := range cases {
		if c.body != "" {
			err := validate(api.requestSchema(t, c.path, c.method), []byte(c.body))
			if c.status == 200 && err != nil {
				t.Errorf("%s %s %.60s: the server takes it, the schema refuses: %v", c.method, c.path, c.body, err)
			}
			if (c.status == 400 || c.status == 413) && err == nil {
				t.Errorf("%s %s %.60s: the server refuses it, the schema takes it", c.method, c.path, c.body)
			}
		}
		code, body := do(c.method, c.path, c.body)
		if code != c.status {
			t.Errorf("%s %s %.60s: %d %s, want %d", c.method, c.path, c.body, code, body, c.status)
			continue
		}
		method := c.method
		if code == 405 { // documented on the operation the path has
			method = map[string]string{"/v1/decide": "POST", "/v1/outcomes": "POST", "/v1/state": "GET"}[c.path]
		}
		if err := validate(api.responseSchema(t, c.path, method, code), body); err != nil {
			t.Errorf("%s %s %.60s: answer %d %.200s does not fit the document: %v", c.method, c.path, c.body, code, body, err)
		}
	}
	// 401 and 415, on a server with a token.
	ts2 := startServer(t, serve.Config{Tokens: []string{"openapi-token-0123456789"}}, b)
	hc2 := tcpJSONClient(t, ts2, false)
	for _, ct := range []string{"application/json", "text/plain"} {
		req, _ := http.NewRequest("POST", "https://"+ts2.TCPAddr().String()+"/v1/decide", strings.NewReader(`{"tasks":[{"id":"a"}]}`))
		req.Header.Set("Content-Type", ct)
		want := 401
		if ct == "text/plain" {
			req.Header.Set("Authorization", "Bearer openapi-token-0123456789")
			want = 415
		}
		resp, err := hc2.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s: %d %s, want %d", ct, resp.StatusCode, data, want)
		}
		if err := validate(api.responseSchema(t, "/v1/decide", "POST", want), data); err != nil {
			t.Errorf("%d answer %s does not fit the document: %v", want, data, err)
		}
	}
	// The document served is the one in the repository, byte for byte.
	_, served2 := do("GET", "/v1/openapi.json", "")
	file, err := os.ReadFile("openapi.json")
	if err != nil || !bytes.Equal(served2, file) {
		t.Errorf("the served document differs from agent/serve/openapi.json (%v)", err)
	}
}
