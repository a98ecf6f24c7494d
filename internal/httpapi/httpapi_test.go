package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

var update = flag.Bool("update", false, "rewrite golden files")

const key = "test-gateway-key"

func setup(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, _ := compiler.CompileSuite(t.Context(), []byte("task: {name: shop, description: d}\ncases: [{key: a, title: a, steps: [{assert: 'true'}]}]\n"), "", compiler.Options{})
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(db, catalog.Options{})
	h := httpapi.New(httpapi.Options{Catalog: cat, MCP: mcpserver.New(cat, mcpserver.Options{Version: "golden"}), Auth: auth.New(db, []string{key}, "")})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, res.Task.ID
}

type hdrs map[string]string

func (h hdrs) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func litePost(t *testing.T, url string, body any) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("SSO-Emp-Id", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, out)
	}
	return out
}

func canon(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

// TestDialectsAgree proves that MCP-Lite and MCP describe the same tools and
// that the same call gives the same result through both.
func TestDialectsAgree(t *testing.T) {
	t.Parallel()
	srv, taskID := setup(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "golden", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/http",
		HTTPClient: &http.Client{Transport: hdrs{"X-Api-Key": key, "SSO-Emp-Id": "alice"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var lite struct{ Tools []any }
	json.Unmarshal(litePost(t, srv.URL+"/mcp/tools/list", map[string]any{}), &lite)
	mcpTools := canon(t, tools.Tools)
	if diff := cmp.Diff(mcpTools, canon(t, lite.Tools)); diff != "" {
		t.Fatalf("tools/list differs between MCP (-) and MCP-Lite (+):\n%s", diff)
	}
	golden := filepath.Join("testdata", "tools.golden.json")
	got, _ := json.MarshalIndent(mcpTools, "", "  ")
	if *update {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, append(got, '\n'), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
		t.Fatalf("the catalog changed (-golden +now); review and run go test -update:\n%s", diff)
	}

	calls := []struct {
		name string
		args map[string]any
	}{
		{"list_test_tasks", map[string]any{}},
		{"get_test_task", map[string]any{"taskId": taskID}},
		{"get_test_task", map[string]any{"taskId": "task_missing"}},
		{"list_test_cases", map[string]any{"taskId": taskID}},
		{"get_test_task", map[string]any{"taskId": 42}},
	}
	for _, c := range calls {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			t.Fatal(err)
		}
		res.Meta = nil
		var l map[string]any
		json.Unmarshal(litePost(t, srv.URL+"/mcp/tools/call", map[string]any{"name": c.name, "arguments": c.args}), &l)
		delete(l, "_meta")
		m := canon(t, res).(map[string]any)
		// Envelope fields of the MCP wire form only: the 2026-07-28
		// resultType, and isError omitted when false.
		delete(m, "resultType")
		if _, ok := m["isError"]; !ok {
			m["isError"] = false
		}
		if diff := cmp.Diff(m, canon(t, l)); diff != "" {
			t.Errorf("%s %v: MCP (-) and MCP-Lite (+) differ:\n%s", c.name, c.args, diff)
		}
	}
}

// TestMCPLiteIdentity is the rule of docs/governance.md ("MCP-Lite: who is
// calling") through the real middleware: the SSO-Emp-Id header and the
// body's user.empId may not disagree; keys are exact; duplicate keys are
// refused; user.empId passes the header's validation; nothing of a refused
// value reaches the audit trail.
func TestMCPLiteIdentity(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, _ := compiler.CompileSuite(t.Context(), []byte("task: {name: shop}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"), "", compiler.Options{})
	if _, err := db.ApplySuite(t.Context(), "alice", s); err != nil {
		t.Fatal(err)
	}
	audit := &auditLog{}
	cat := catalog.New(db, catalog.Options{Auditor: audit})
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Catalog: cat, Auth: auth.New(db, []string{key}, ""),
		MCP: mcpserver.New(cat, mcpserver.Options{Codes: httpapi.Codes})}))
	defer srv.Close()
	post := func(headers map[string][]string, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp/tools/call", strings.NewReader(body))
		for k, vs := range headers {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	keyOnly := map[string][]string{"X-Api-Key": {key}}
	asAlice := map[string][]string{"X-Api-Key": {key}, "SSO-Emp-Id": {"alice"}}
	list := `"name":"list_test_tasks","arguments":{}`
	long := strings.Repeat("a", 10000)
	tests := []struct {
		name    string
		headers map[string][]string
		body    string
		status  int
		code    duet.Code
		total   float64 // alice sees 1 task, anyone else 0
	}{
		{"header and body agree", asAlice, `{` + list + `,"user":{"empId":"alice"}}`, 200, "", 1},
		{"header and body differ", asAlice, `{` + list + `,"user":{"empId":"bob"}}`, 400, duet.CodeIdentityMismatch, 0},
		{"body only", keyOnly, `{` + list + `,"user":{"empId":"bob"}}`, 200, "", 0},
		{"body only, alice", keyOnly, `{` + list + `,"user":{"empId":"alice"}}`, 200, "", 1},
		{"header only", asAlice, `{` + list + `}`, 200, "", 1},
		{"USER is not user", asAlice, `{` + list + `,"USER":{"empId":"bob"}}`, 400, duet.CodeInvalidArgument, 0},
		{"EMPID is not empId", keyOnly, `{` + list + `,"user":{"EMPID":"alice"}}`, 400, duet.CodeInvalidArgument, 0},
		{"a later duplicate user", keyOnly, `{` + list + `,"user":{"empId":"alice"},"user":{"empId":"bob"}}`, 400, duet.CodeInvalidArgument, 0},
		{"a newline in empId", keyOnly, `{` + list + `,"user":{"empId":"bob\nFORGED alice"}}`, 401, duet.CodeUnauthenticated, 0},
		{"a NUL in empId", keyOnly, `{` + list + `,"user":{"empId":"bob\u0000"}}`, 401, duet.CodeUnauthenticated, 0},
		{"10,000 characters of empId", keyOnly, `{` + list + `,"user":{"empId":"` + long + `"}}`, 401, duet.CodeUnauthenticated, 0},
		{"two SSO-Emp-Id headers", map[string][]string{"X-Api-Key": {key}, "SSO-Emp-Id": {"bob", "alice"}}, `{` + list + `}`, 400, duet.CodeIdentityMismatch, 0},
	}
	for _, tt := range tests {
		status, out := post(tt.headers, tt.body)
		if status != tt.status {
			t.Errorf("%s: status %d %v, want %d", tt.name, status, out, tt.status)
			continue
		}
		if tt.code != "" {
			if e, _ := out["error"].(map[string]any); e == nil || e["code"] != string(tt.code) {
				t.Errorf("%s: got %v, want %s", tt.name, out, tt.code)
			}
			continue
		}
		if sc, _ := out["structuredContent"].(map[string]any); sc == nil || sc["total"] != tt.total {
			t.Errorf("%s: got %v, want total %v", tt.name, out, tt.total)
		}
	}
	for _, r := range audit.all() {
		if strings.ContainsAny(r.Caller, "\n\x00") || len(r.Caller) > duet.MaxUserIDBytes || strings.Contains(r.Caller, "FORGED") {
			t.Errorf("a refused user id reached the audit: %q", r.Caller)
		}
	}
}
