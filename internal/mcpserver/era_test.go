package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver"
)

// TestBothErasWithSessions: with sessions on, the one endpoint serves a
// 2026-07-28 client (server/discover, no session, every version it lists
// served) and handshake-era clients with sessions, side by side; the
// discover result advertises the Tasks extension. Before, every
// 2026-07-28 request was refused with -32022 while discover listed it.
func TestBothErasWithSessions(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	var mu sync.Mutex
	sessions := map[string]bool{} // protocol version → saw a session id
	h := asUser(s.HTTPHandler(mcpserver.HTTPOptions{Sessions: true}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		v := r.Header.Get("Mcp-Protocol-Version")
		mu.Lock()
		sessions[v] = sessions[v] || w.Header().Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Session-Id") != ""
		mu.Unlock()
	}))
	defer srv.Close()
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("version="+version, func(t *testing.T) {
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			cs := connectHTTP(t, srv.URL, "alice", opts)
			want := version
			if want == "" {
				want = "2026-07-28"
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("negotiated %s, want %s", got, want)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: catalog.ToolGetTask, Arguments: map[string]any{"taskId": task.ID}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
		})
	}
	mu.Lock()
	if sessions["2026-07-28"] {
		t.Errorf("a 2026-07-28 request got a session")
	}
	if !sessions["2025-11-25"] || !sessions["2025-06-18"] {
		t.Errorf("handshake-era clients got no session: %v", sessions)
	}
	mu.Unlock()

	// server/discover lists every version and the Tasks extension.
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	req.Header.Set("X-Test-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Error  any `json:"error"`
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
			Capabilities      struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Error != nil {
		t.Fatalf("discover: %v %v", out.Error, err)
	}
	for _, v := range []string{"2026-07-28", "2025-11-25", "2025-06-18"} {
		if !slices.Contains(out.Result.SupportedVersions, v) {
			t.Errorf("discover lists %v, not %s", out.Result.SupportedVersions, v)
		}
	}
	if _, ok := out.Result.Capabilities.Extensions[catalog.TasksExtension]; !ok {
		t.Errorf("discover does not advertise the Tasks extension: %+v", out.Result.Capabilities)
	}
}
