package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/mcpserver"
)

// TestProtocolVersions pins what README.md and docs/interop.md say the
// endpoint speaks: 2026-07-28 (server/discover, no handshake) and the
// handshake versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05,
// each answered in its own version.
func TestProtocolVersions(t *testing.T) {
	t.Parallel()
	s, _ := setup(t)
	srv := httptest.NewServer(asUser(s.HTTPHandler(mcpserver.HTTPOptions{})))
	defer srv.Close()
	post := func(version, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Test-User", "alice")
		if version == "2026-07-28" {
			req.Header.Set("Mcp-Protocol-Version", version)
			req.Header.Set("Mcp-Method", "server/discover")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if i := strings.Index(string(b), "data: "); i >= 0 { // an event stream
			b = []byte(strings.TrimSpace(strings.SplitN(string(b[i+6:]), "\n", 2)[0]))
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %d %q", version, resp.StatusCode, b)
		}
		return m
	}
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		m := post(v, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		res, _ := m["result"].(map[string]any)
		if got, _ := res["protocolVersion"].(string); got != v {
			t.Errorf("initialize %s: got %v, want the same version", v, m)
		}
	}
	m := post("2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	res, _ := m["result"].(map[string]any)
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), "2026-07-28") {
		t.Errorf("server/discover: got %v, want 2026-07-28 among the versions", m)
	}
}
