// Package mcptest serves real MCP servers (and things that are not MCP
// servers) on loopback for tests of the MCP client side: go-sdk servers over
// Streamable HTTP (stateful or stateless, SSE or JSON replies) and over the
// legacy HTTP+SSE transport, a server with many pages of tools, an MCP-Lite
// endpoint, a plain REST endpoint, an HTML page and a redirect to a login
// page.
package mcptest

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Start serves h on 127.0.0.1 for the duration of the test and returns its
// base URL (http://127.0.0.1:PORT).
func Start(tb testing.TB, h http.Handler) string {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(func() {
		// Open event streams of clients still connected would keep Close
		// waiting.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// BigNumber is a value of structuredContent that a float64 cannot hold, to
// check that results pass through unchanged.
const BigNumber uint64 = 12345678901234567891

// SlowFor is how long the slow tool waits when nobody cancels the call (a
// call cancelled before its request was fully sent is never cancelled on the
// server).
const SlowFor = 5 * time.Second

// AddIn is the input of the add tool.
type AddIn struct {
	A int `json:"a" jsonschema:"first addend"`
	B int `json:"b" jsonschema:"second addend"`
}

// Counters count what a server saw.
type Counters struct {
	Initialize atomic.Int64 // initialize requests (one per stateful session)
	Discover   atomic.Int64 // server/discover requests
	Calls      atomic.Int64 // tools/call requests
	Lists      atomic.Int64 // tools/list requests
}

// NewServer returns a go-sdk MCP server with the tools
//
//   - add {a, b} → text "a+b=sum" and structuredContent {sum, big} (big is
//     [BigNumber]); annotated read-only;
//   - fail {} → an isError result "FAILED: on purpose";
//   - slow {} → waits until the call is cancelled (or [SlowFor]);
//   - ask {} → asks the client to fill a form with defaults (elicitation)
//     and returns the answer as text.
//
// Counters, if not nil, count the requests it receives.
func NewServer(name string, n *Counters) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	if n != nil {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				switch method {
				case "initialize":
					n.Initialize.Add(1)
				case "server/discover":
					n.Discover.Add(1)
				case "tools/call":
					n.Calls.Add(1)
				case "tools/list":
					n.Lists.Add(1)
				}
				return next(ctx, method, req)
			}
		})
	}
	s.AddTool(&mcp.Tool{Name: "add", Description: "Add two integers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"integer"},"big":{"type":"integer"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in AddIn
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			sum := in.A + in.B
			// Raw JSON, so that the big number reaches the wire exactly.
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%d+%d=%d", in.A, in.B, sum)}},
				StructuredContent: json.RawMessage(fmt.Sprintf(`{"sum":%d,"big":%d}`, sum, BigNumber))}, nil
		})
	s.AddTool(&mcp.Tool{Name: "fail", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "FAILED: on purpose"}},
				StructuredContent: map[string]any{"error": map[string]any{"code": "FAILED"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", Description: "Waits until cancelled.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
			case <-time.After(SlowFor):
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "ask", Description: "Asks the client for a form with defaults.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message: "confirm",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
					"name":  map[string]any{"type": "string", "default": "Duet"},
					"count": map[string]any{"type": "integer", "default": 3},
				}, "required": []string{"name"}},
			})
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(b)}}}, nil
		})
	return s
}

// Streamable serves s over Streamable HTTP at every path.
func Streamable(s *mcp.Server, stateless, jsonReplies bool) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: stateless, JSONResponse: jsonReplies})
}

// LegacySSE serves s over the legacy HTTP+SSE transport (2024-11-05): GET
// opens the event stream, POSTs go to the endpoint it announces. A POST
// without a session, as a Streamable HTTP client sends, gets 400.
func LegacySSE(s *mcp.Server) http.Handler {
	return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// RequireBearer lets through only requests with "Authorization: Bearer
// token"; others get 401 with a WWW-Authenticate header.
func RequireBearer(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ManyTools returns a server with n tools named tool_0000 … whose
// tools/list pages hold pageSize tools each.
func ManyTools(n, pageSize int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "many-tools", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: pageSize})
	for i := range n {
		name := fmt.Sprintf("tool_%04d", i)
		s.AddTool(&mcp.Tool{Name: name, Description: "Tool number " + name,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			})
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Lite serves the MCP-Lite REST dialect at /mcp/tools/list and
// /mcp/tools/call, as some company gateways call providers; anything else is
// 404. Register http://HOST/mcp to see it diagnosed.
func Lite() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp/tools/list", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"tools": []any{map[string]any{"name": "query_order", "description": "Read an order",
			"inputSchema": map[string]any{"type": "object"}}}})
	})
	mux.HandleFunc("POST /mcp/tools/call", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Name string `json:"name"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		if in.Name != "query_order" {
			writeJSON(w, 200, map[string]any{"content": []any{map[string]any{"type": "text", "text": "unknown tool"}}, "isError": true})
			return
		}
		writeJSON(w, 200, map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}, "isError": false})
	})
	return mux
}

// REST answers every request with plain JSON, as an ordinary REST API does.
func REST() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"orders": []any{map[string]any{"id": "A1001", "status": "paid"}}, "total": 1})
	})
}

// HTML answers every request with an HTML page.
func HTML() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Orders Portal</title></head><body><h1>Welcome</h1></body></html>")
	})
}

// LoginRedirect redirects every request to a login page, as a web single
// sign-on front does.
func LoginRedirect() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/sso/login") {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><head><title>Sign in</title></head><body><form><input type="password" name="password"></form></body></html>`)
			return
		}
		http.Redirect(w, r, "/sso/login?state=abc123&return="+r.URL.Path, http.StatusFound)
	})
}

// Flaky answers 503 Service Unavailable to the next n tools/call requests
// (set with Fail), without passing them to h, as an overloaded gateway in
// front of a server does.
type Flaky struct {
	H    http.Handler
	fail atomic.Int64
}

// Fail makes the next n tools/call requests fail.
func (f *Flaky) Fail(n int) { f.fail.Store(int64(n)) }

func (f *Flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && f.fail.Load() > 0 {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && f.fail.Add(-1) >= 0 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
	}
	f.H.ServeHTTP(w, r)
}
