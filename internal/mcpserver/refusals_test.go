package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestSDKRefusals pins how the requests the SDK refuses with a plain-text
// HTTP error are answered: a JSON-RPC error whose code follows the HTTP
// status (never the SDK's wording), the status kept, and an audit record.
// A new SDK that changes a status fails here.
func TestSDKRefusals(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	audit := &records{}
	cat := catalog.New(db, catalog.Options{Auditor: audit})
	s := mcpserver.New(cat, mcpserver.Options{Codes: httpapi.Codes})
	stateless := httptest.NewServer(asUser(s.HTTPHandler(mcpserver.HTTPOptions{})))
	defer stateless.Close()
	sessions := httptest.NewServer(asUser(s.HTTPHandler(mcpserver.HTTPOptions{Sessions: true})))
	defer sessions.Close()

	list := `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`
	tests := []struct {
		name, url, method, body string
		headers                 map[string]string
		status                  int
		code                    duet.Code
		id                      string
	}{
		{"an unsupported protocol version", stateless.URL, "POST", list, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, duet.CodeInvalidRequest, "5"},
		{"Accept without event streams", stateless.URL, "POST", list, map[string]string{"Accept": "application/json"}, 400, duet.CodeInvalidRequest, "5"},
		{"a method nobody handles", stateless.URL, "POST", `{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`, nil, 400, duet.CodeInvalidRequest, "5"},
		{"a notification with an id", stateless.URL, "POST", `{"jsonrpc":"2.0","id":5,"method":"notifications/initialized"}`, nil, 400, duet.CodeInvalidRequest, "5"},
		{"a batch in 2025-06-18", stateless.URL, "POST", `[` + list + `]`, nil, 400, duet.CodeInvalidRequest, "null"},
		{"a text/plain body", stateless.URL, "POST", list, map[string]string{"Content-Type": "text/plain"}, 415, duet.CodeInvalidRequest, "5"},
		{"GET without sessions", stateless.URL, "GET", "", nil, 405, duet.CodeInvalidRequest, "null"},
		{"DELETE without sessions", stateless.URL, "DELETE", "", nil, 405, duet.CodeInvalidRequest, "null"},
		{"GET without a session id", sessions.URL, "GET", "", map[string]string{"Accept": "text/event-stream"}, 400, duet.CodeInvalidRequest, "null"},
		{"DELETE without a session id", sessions.URL, "DELETE", "", nil, 400, duet.CodeInvalidRequest, "null"},
		{"an unknown session", sessions.URL, "POST", list, map[string]string{"Mcp-Session-Id": "nope"}, 404, duet.CodeNotFound, "5"},
		{"GET of an unknown session", sessions.URL, "GET", "", map[string]string{"Mcp-Session-Id": "nope", "Accept": "text/event-stream"}, 404, duet.CodeNotFound, "null"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, tt.url, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Test-User", "alice")
		for k, v := range tt.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			ID    json.RawMessage `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(b, &e)
		if resp.StatusCode != tt.status || e.Error.Code != httpapi.RPCCodeOf(tt.code) || !strings.HasPrefix(e.Error.Message, string(tt.code)+": ") ||
			string(e.ID) != tt.id || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: got %d %s %s, want %d %s (JSON-RPC %d) id %s", tt.name, resp.StatusCode, resp.Header.Get("Content-Type"), b, tt.status, tt.code, httpapi.RPCCodeOf(tt.code), tt.id)
		}
	}
	audit.mu.Lock()
	defer audit.mu.Unlock()
	refused := map[duet.Code]int{}
	for _, r := range audit.recs {
		if r.Caller == "alice" {
			refused[r.Outcome]++
		}
	}
	if refused[duet.CodeInvalidRequest] != 10 || refused[duet.CodeNotFound] != 2 {
		t.Errorf("audited refusals: %v, want 10 INVALID_REQUEST and 2 NOT_FOUND", refused)
	}
}

// TestProtocolErrorOfACallAuditedOnce: a call that a tool refuses with a
// protocol error (CAPABILITY_REQUIRED, -32021: HTTP 400 for a 2026-07-28
// client) leaves one audit record — the catalog's — on either path; the
// HTTP door audits only the refusals of the protocol layer itself, which
// no handler saw.
func TestProtocolErrorOfACallAuditedOnce(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	needsExt := catalog.Define("needs_extension", "", "needs an extension the client never has", catalog.Annotations{ReadOnly: true}, nil,
		func(ctx context.Context, env *catalog.Env, _ struct{}) (textOut, error) {
			return textOut{}, &catalog.CapabilityError{Message: "declare the x extension"}
		})
	audit := &records{}
	s := mcpserver.New(catalog.New(db, catalog.Options{Auditor: audit, Extra: []*catalog.Tool{needsExt}}), mcpserver.Options{Codes: httpapi.Codes})
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"needs_extension","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	headers := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "needs_extension"}
	for _, noFast := range []bool{false, true} {
		before := len(audit.find("tools/call", "needs_extension"))
		r := send(asUser(s.HTTPHandler(mcpserver.HTTPOptions{NoFastPath: noFast})), body, headers)
		if r.status != 400 || !strings.Contains(string(r.body), `"code":-32021`) {
			t.Fatalf("NoFastPath %v: %d %s, want 400 and -32021", noFast, r.status, r.body)
		}
		if got := audit.find("tools/call", "needs_extension")[before:]; len(got) != 1 || got[0].Outcome != duet.CodeCapabilityRequired {
			var outcomes []duet.Code
			for _, rec := range got {
				outcomes = append(outcomes, rec.Outcome)
			}
			t.Errorf("NoFastPath %v: audit records %v, want one CAPABILITY_REQUIRED", noFast, outcomes)
		}
	}
	// A tool the server does not have: the SDK refuses it before any tool
	// handler; one NOT_FOUND record in either era (the 2026-07-28 refusal
	// is an HTTP 400 the door used to audit a second time).
	for _, c := range []struct {
		body    string
		headers map[string]string
	}{
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "no_such_tool"}},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`, map[string]string{"Mcp-Protocol-Version": "2025-11-25"}},
	} {
		before := len(audit.find("tools/call", "no_such_tool"))
		r := send(asUser(s.HTTPHandler(mcpserver.HTTPOptions{})), c.body, c.headers)
		if !strings.Contains(string(r.body), `"error"`) {
			t.Fatalf("unknown tool (%s): %d %s, want an error", c.headers["Mcp-Protocol-Version"], r.status, r.body)
		}
		if got := audit.find("tools/call", "no_such_tool")[before:]; len(got) != 1 || got[0].Outcome != duet.CodeNotFound {
			t.Errorf("unknown tool (%s): %d audit records %+v, want one NOT_FOUND", c.headers["Mcp-Protocol-Version"], len(got), got)
		}
	}
}
