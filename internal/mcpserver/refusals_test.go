package mcpserver_test

import (
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
