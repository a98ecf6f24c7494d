package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

func setup(t *testing.T) (*mcpserver.Server, *duet.Task) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, _ := compiler.CompileSuite(t.Context(), []byte("task: {name: shop}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"), "", compiler.Options{})
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	return mcpserver.New(catalog.New(db, catalog.Options{}), mcpserver.Options{Version: "test", Codes: httpapi.Codes}), res.Task
}

// asUser is a stand-in for the auth middleware: the user comes from a header.
func asUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := duet.NewContextWithCaller(r.Context(), duet.Caller{UserID: r.Header.Get("X-Test-User"), Source: duet.SourceMCP})
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

type headerRT struct{ user string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-User", h.user)
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, user string, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: headerRT{user}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHTTPCallerFromContext(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	srv := httptest.NewServer(asUser(s.HTTPHandler(mcpserver.HTTPOptions{})))
	defer srv.Close()
	for _, version := range []string{"", "2025-11-25", "2025-06-18"} {
		t.Run("version="+version, func(t *testing.T) {
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			cs := connectHTTP(t, srv.URL, "alice", opts)
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil || len(tools.Tools) != 7 {
				t.Fatalf("tools: %v %v", tools, err)
			}
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_test_task", Arguments: map[string]any{"taskId": task.ID}})
			if err != nil || res.IsError {
				t.Fatalf("get_test_task as alice: %+v %v", res, err)
			}
			if res.Meta[mcpserver.TraceMetaKey] == "" {
				t.Fatalf("no trace id in _meta: %+v", res.Meta)
			}
			bob := connectHTTP(t, srv.URL, "bob", opts)
			res, err = bob.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_test_task", Arguments: map[string]any{"taskId": task.ID}})
			if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "NOT_FOUND") {
				t.Fatalf("get_test_task as bob: %+v %v", res, err)
			}
			_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "drop_tables", Arguments: map[string]any{}})
			if err == nil {
				t.Fatal("unknown tool: got no protocol error")
			}
		})
	}
}

func TestHTTPReplyShape(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	srv := httptest.NewServer(asUser(s.HTTPHandler(mcpserver.HTTPOptions{MaxBodyBytes: 1 << 20})))
	defer srv.Close()
	post := func(body string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Test-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"` + task.ID + `"}}}`
	resp := post(call)
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || !bytes.Contains(b, []byte(`"structuredContent"`)) {
		t.Fatalf("plain call: %s %s", ct, b)
	}
	withProgress := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"p1"},"name":"get_test_task","arguments":{"taskId":"` + task.ID + `"}}}`
	resp = post(withProgress)
	b, _ = io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") || !bytes.Contains(b, []byte(`"structuredContent"`)) {
		t.Fatalf("call with progressToken: %s %s", ct, b)
	}
	resp = post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"` + strings.Repeat("x", 2<<20) + `"}}}`)
	b, _ = io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Code int } `json:"error"`
	}
	json.Unmarshal(b, &e)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Error.Code != httpapi.RPCCodeOf(duet.CodeTooLarge) {
		t.Fatalf("10 MB body: %d %s", resp.StatusCode, b)
	}
	for _, bad := range []string{`{not json`, `{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`} {
		resp = post(bad)
		b, _ = io.ReadAll(resp.Body)
		if !bytes.Contains(b, []byte(`"error"`)) {
			t.Fatalf("%s: got %d %s, want a JSON-RPC error", bad, resp.StatusCode, b)
		}
	}
}

func TestStdio(t *testing.T) {
	t.Parallel()
	s, task := setup(t)
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.ServeStdio(ctx, duet.Caller{UserID: "alice"}, sr, sw) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	var out catalog.ListTasksOut
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	if out.Total != 1 || out.Tasks[0].ID != task.ID {
		t.Fatalf("got %s", b)
	}
	// A 10 MB argument is refused as TOO_LARGE and the session goes on.
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_test_task", Arguments: map[string]any{"taskId": strings.Repeat("x", 10<<20)}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "TOO_LARGE") {
		t.Fatalf("10 MB argument: %v %v", res, err)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("after the large argument: %v %v", res, err)
	}
	cs.Close()
	cancel()
	<-done
}
