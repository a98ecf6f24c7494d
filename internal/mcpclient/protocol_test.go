package mcpclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// richSchema uses the keywords an archive must keep: $schema, $defs, a
// same-document $ref and a network $ref (never fetched), x-mcp-header.
const richSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"city":{"type":"string"}}}},` +
	`"properties":{"region":{"type":"string","x-mcp-header":"Region"},"priority":{"type":"integer","x-mcp-header":"Priority"},` +
	`"note":{"type":"string","x-mcp-header":"Note"},"address":{"$ref":"#/$defs/address"},"remote":{"$ref":"http://127.0.0.1:1/never.json"},` +
	`"float":{"type":"number"}},"additionalProperties":false}`

// TestModernServer: against a go-sdk server of the 2026-07-28 revision, the
// archive keeps a tool's input schema keyword for keyword (nothing
// dereferenced), and a call carries the Mcp-Param-* headers its x-mcp-header
// arguments ask for — plain, base64 for a value with non-ASCII characters or
// edge whitespace, none for an absent argument — on the long-lived session
// that never listed the tools itself.
func TestModernServer(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "route", InputSchema: json.RawMessage(richSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "routed"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var seen []http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	e := newEnv(t)
	reg := e.register(t, "alice", "modern", ts.URL, nil)
	if reg.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", reg.ProtocolVersion)
	}
	_, tools, err := e.c.Server(t.Context(), "alice", "modern")
	if err != nil || len(tools) != 1 {
		t.Fatalf("archive: %v, %v", tools, err)
	}
	var got, want any
	json.Unmarshal(tools[0].InputSchema, &got)
	json.Unmarshal([]byte(richSchema), &want)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("archived schema\n%s\nwant\n%s", gb, wb)
	}

	res, err := e.invoke(t, "alice", reg.ServerKey, "route", map[string]any{"region": "us-west1", "priority": 42, "note": "Hello, 世界", "float": 3.5})
	if err != nil || res.Text() != "routed" {
		t.Fatalf("call: %v, %v", res, err)
	}
	if _, err := e.invoke(t, "alice", reg.ServerKey, "route", map[string]any{"note": " padded "}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d tools/call requests, want 2", len(seen))
	}
	for k, v := range map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Param-Priority": "42", "Mcp-Param-Note": "=?base64?SGVsbG8sIOS4lueVjA==?="} {
		if got := seen[0].Get(k); got != v {
			t.Errorf("%s: got %q, want %q", k, got, v)
		}
	}
	for k := range seen[0] {
		if strings.HasPrefix(k, "Mcp-Param-") && k != "Mcp-Param-Region" && k != "Mcp-Param-Priority" && k != "Mcp-Param-Note" {
			t.Errorf("unexpected header %s", k)
		}
	}
	if got := seen[1].Get("Mcp-Param-Note"); got != "=?base64?IHBhZGRlZCA=?=" {
		t.Errorf("edge whitespace: got %q", got)
	}
	if seen[1].Get("Mcp-Param-Region") != "" {
		t.Errorf("an absent argument got a header")
	}
}
