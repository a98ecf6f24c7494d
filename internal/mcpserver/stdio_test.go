package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// collected is the stdout of ServeStdio.
type collected struct {
	mu sync.Mutex
	strings.Builder
}

func (c *collected) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Builder.Write(p)
}

func (*collected) Close() error { return nil }

// TestStdioAnswersPipelinedRequests: a client that writes its requests and
// closes its end at once (`printf ... | duet mcp`) gets an answer to each
// before the server exits, in both protocol eras.
func TestStdioAnswersPipelinedRequests(t *testing.T) {
	t.Parallel()
	const v26 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"pipe","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for name, lines := range map[string][]string{
		"handshake": {
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
		},
		"2026-07-28": {
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + v26 + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + v26 + `}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{},` + v26 + `}}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, _ := setup(t)
			in := io.NopCloser(strings.NewReader(strings.Join(lines, "\n") + "\n"))
			out := &collected{}
			done := make(chan error, 1)
			go func() { done <- s.ServeStdio(t.Context(), duet.Caller{UserID: "alice"}, in, out) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ServeStdio: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("ServeStdio did not return after the end of input")
			}
			want := 0
			for _, l := range lines {
				if strings.Contains(l, `"id":`) {
					want++
				}
			}
			got := map[string]bool{}
			sc := bufio.NewScanner(strings.NewReader(out.String()))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("not JSON-RPC: %q", sc.Text())
				}
				if m.Result == nil {
					t.Errorf("response %s: got an error %s, want a result", m.ID, m.Error)
				}
				got[string(m.ID)] = true
			}
			if len(got) != want {
				t.Errorf("got %d responses (%v), want %d:\n%s", len(got), got, want, out.String())
			}
		})
	}
}
