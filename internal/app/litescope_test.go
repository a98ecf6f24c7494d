package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/oidctest"
)

// lite posts one MCP-Lite request with token.
func lite(t *testing.T, base, token, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scopeVerdict is what an answer says of the token's scope: "refused"
// (INSUFFICIENT_SCOPE, HTTP 403) or "admitted" (the call reached the
// tool, whatever the tool then answered).
func scopeVerdict(status int, body string) string {
	if status == http.StatusForbidden && strings.Contains(body, "INSUFFICIENT_SCOPE") {
		return "refused"
	}
	if strings.Contains(body, "INSUFFICIENT_SCOPE") {
		return "refused with status " + http.StatusText(status)
	}
	return "admitted"
}

// TestLiteHonoursScopes: MCP-Lite is another dialect of the same catalog,
// so an OAuth access token allows over MCP-Lite exactly what it allows over
// /mcp/http — one governance. For tokens with the read scope, the read and
// run scopes, and neither, every tool of the catalog (with the arguments
// of a real call where the tool needs them) is refused for its scope over
// MCP-Lite if and only if it is over /mcp/http: a read-scope token cannot
// start a run over either; tools/list needs one of Duet's scopes on both.
func TestLiteHonoursScopes(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resourceLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resource := "http://" + resourceLn.Addr().String() + "/mcp/http"
	client := oidctest.Client{ID: "copilot", Secret: "copilot-secret", RedirectURIs: []string{"http://127.0.0.1:9/cb"}, Audience: []string{resource}}
	p := oidctest.StartOn(t, ln, client)
	_, base := serveOAuthAppOn(t, resourceLn, map[string]string{"DUET_OAUTH_ISSUER": p.URL})

	tokens := map[string]string{
		"read":     providerToken(t, p, client, "duet:read"),
		"read+run": providerToken(t, p, client, "duet:read", "duet:run"),
		"none":     providerToken(t, p, client, "profile"),
	}
	// The catalog's tools, as the run token lists them.
	_, body := call(t, base, tokens["read+run"], "tools/list", `{}`)
	var list struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(body), "data: ")), &list); err != nil || len(list.Result.Tools) < 5 {
		t.Fatalf("tools/list: %v %s", err, body)
	}
	args := map[string]string{
		"start_test_run":  `{"taskId":"task_x","idempotencyKey":"k"}`,
		"cancel_test_run": `{"runId":"run_x"}`,
		"stop_test_run":   `{"runId":"run_x"}`,
	}
	for name, tok := range tokens {
		for _, tool := range list.Result.Tools {
			a := args[tool.Name]
			if a == "" {
				a = `{}`
			}
			st, mb := call(t, base, tok, "tools/call", `{"name":"`+tool.Name+`","arguments":`+a+`}`)
			ls, lb := lite(t, base, tok, "/mcp/tools/call", `{"name":"`+tool.Name+`","arguments":`+a+`}`)
			mcpV, liteV := scopeVerdict(st.StatusCode, mb), scopeVerdict(ls, lb)
			if mcpV != liteV {
				t.Errorf("%s token, %s: /mcp/http %s (%d %s), MCP-Lite %s (%d %s)", name, tool.Name, mcpV, st.StatusCode, mb, liteV, ls, lb)
			}
			if tool.Name == "start_test_run" {
				if want := map[string]string{"read": "refused", "read+run": "admitted", "none": "refused"}[name]; liteV != want {
					t.Errorf("%s token, start_test_run over MCP-Lite: %s (%d %s), want %s", name, liteV, ls, lb, want)
				}
			}
		}
		st, mb := call(t, base, tok, "tools/list", `{}`)
		ls, lb := lite(t, base, tok, "/mcp/tools/list", `{}`)
		if mcpV, liteV := scopeVerdict(st.StatusCode, mb), scopeVerdict(ls, lb); mcpV != liteV || (name == "none") != (liteV == "refused") {
			t.Errorf("%s token, tools/list: /mcp/http %s, MCP-Lite %s (%d %s)", name, mcpV, liteV, ls, lb)
		}
	}
}
