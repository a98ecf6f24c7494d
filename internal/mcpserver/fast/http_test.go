package fast_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/conformance"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// twoPaths is one MCP server behind two HTTP handlers: the default one
// (fast path on) and one that sends everything through the SDK.
type twoPaths struct {
	srv       *mcpserver.Server
	fast, sdk http.Handler
	taskID    string
}

// contentTools are the conformance fixtures that replace their content
// blocks (images, audio, embedded resources) and do not talk back to the
// client.
var contentTools = map[string]bool{conformance.ToolSimpleText: true, conformance.ToolImage: true, conformance.ToolAudio: true,
	conformance.ToolEmbeddedResource: true, conformance.ToolMixed: true, conformance.ToolError: true}

func newTwoPaths(t testing.TB, extra ...*catalog.Tool) *twoPaths {
	t.Helper()
	return newTwoPathsLimits(t, catalog.Limits{}, extra...)
}

// newTwoPathsLimits is newTwoPaths with the catalog's limits.
func newTwoPathsLimits(t testing.TB, limits catalog.Limits, extra ...*catalog.Tool) *twoPaths {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// Characters JSON encoders treat differently: <, >, &, quotes, unicode.
	src := "task: {name: \"shop <&> \\\"x\\\"\", description: \"ünïcode ✓ <b>&amp;</b> \\u2028\"}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"
	s, err := compiler.CompileSuite(context.Background(), []byte(src), "", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplySuite(context.Background(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range conformance.New().Tools {
		if contentTools[tool.Name] {
			extra = append(extra, tool)
		}
	}
	// FastPathOn: the fast paths are compared with the SDK even in a run
	// with DUET_MCP_FAST_PATH=off.
	srv := mcpserver.New(catalog.New(db, catalog.Options{Extra: extra, Limits: limits}), mcpserver.Options{Codes: httpapi.Codes, FastPath: mcpserver.FastPathOn})
	fixed := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := duet.NewContextWithCaller(r.Context(), duet.Caller{UserID: r.Header.Get("X-Test-User"), Source: duet.SourceMCP, TraceID: "0123456789abcdef0123456789abcdef"})
			h.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	return &twoPaths{srv: srv, taskID: res.Task.ID,
		fast: fixed(srv.HTTPHandler(mcpserver.HTTPOptions{})),
		sdk:  fixed(srv.HTTPHandler(mcpserver.HTTPOptions{NoFastPath: true}))}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// send posts body to h in process, with the headers a client sends,
// changed by headers ("" deletes one).
func send(h http.Handler, body string, headers map[string]string) reply {
	req := httptest.NewRequest("POST", "/mcp/http", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Test-User", "alice")
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Length") == "" && rec.Code != http.StatusAccepted {
		// What net/http adds to a reply the handler did not frame (and
		// chunks for a long one): the framing is not the content.
		rec.Header().Set("Content-Length", fmt.Sprint(rec.Body.Len()))
	}
	return reply{rec.Code, rec.Header(), rec.Body.Bytes()}
}

// differ describes how two replies differ ("" when they do not).
func differ(f, s reply) string {
	if f.status != s.status || !bytes.Equal(f.body, s.body) {
		return fmt.Sprintf("fast path %d %s\nSDK       %d %s", f.status, f.body, s.status, s.body)
	}
	for _, h := range []string{"Content-Type", "Cache-Control", "Mcp-Session-Id", "Content-Length", "Retry-After"} {
		if f.header.Get(h) != s.header.Get(h) {
			return fmt.Sprintf("header %s: fast path %q, SDK %q", h, f.header.Get(h), s.header.Get(h))
		}
	}
	return ""
}

// TestFastPathIsByteEquivalent sends every request both through the fast
// path and through the SDK alone and requires the same status, headers and
// body, byte for byte — and, request by request, that the fast path served
// exactly the requests it is meant to (FastPathServed), so the comparison
// cannot pass with the fast path switched off.
func TestFastPathIsByteEquivalent(t *testing.T) {
	t.Parallel()
	p := newTwoPaths(t)
	id := p.taskID
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	}
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	bodies := []struct {
		body string
		fast bool // the fast path answers it (under a fast variant)
	}{
		{call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"}}`), true},
		{call(`{"name":"list_test_tasks","arguments":{}}`), true},
		{call(`{"name":"` + conformance.ToolImage + `","arguments":{}}`), true},
		{call(`{"name":"` + conformance.ToolMixed + `","arguments":{}}`), true},
		{call(`{"name":"` + conformance.ToolAudio + `"}`), true},
		{call(`{"name":"list_test_tasks"}`), true},
		{call(`{"name":"list_test_tasks","arguments":null}`), false},
		{call(`{"name":"list_test_cases","arguments":{"taskId":"` + id + `","limit":1}}`), true},
		{call(`{"name":"get_test_task","arguments":{"taskId":"task_missing"}}`), true},
		{call(`{"name":"get_test_task","arguments":{"taskId":42}}`), true},
		{call(`{"name":"get_test_task","arguments":{"taskId":"x","extra":true}}`), true},
		{call(`{"name":"get_test_task","arguments":[1]}`), false},
		{call(`{"name":"no_such_tool","arguments":{}}`), false},
		{call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`), true},
		{call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"progressToken":"p"}}`), false},
		{call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"other":1}}`), false},
		{call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"requestState":"s"}`), false},
		{`{"jsonrpc":"2.0","id":"str-<id>&","method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, true},
		{`{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, true},
		{`{"jsonrpc":"2.0","id":-9007199254740991,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, true},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1e2,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","ID":5,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, false},
		// The SDK decodes a message into its whole decode form
		// (jsonrpc2.wireDecode): an error member that does not decode
		// makes it refuse the request; a result member is ignored.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}},"error":"x"}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}},"error":{"code":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}},"error":null,"result":5}`, true},
		{`{"jsonrpc":"1.0","id":2,"method":"tools/call","params":{"name":"list_test_tasks"}}`, false},
		{`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks"}}]`, false},
		{`  ` + call(`{"name":"get_test_task","arguments":{"taskId":"`+id+`"}}`) + "\n", true},
		// Keys differing only in case: the SDK reads the exact key.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"list_test_tasks","arguments":{}}}`, true},
		{call(`{"name":"get_test_task","Name":"list_test_tasks","arguments":{"taskId":"` + id + `"}}`), true},
		{call(`{"NAME":"list_test_tasks","arguments":{}}`), false},
		// Refused on both paths before either reads them.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`, false},
		{call(`{"name":"get_test_task","name":"list_test_tasks","arguments":{}}`), false},
		{call(`{"name":"get_test_task","arguments":{"taskId":"a","taskId":"` + id + `"}}`), false},
		{call(`{"name":"list_test_tasks","arguments":{}}`) + ` {"x":1}`, false},
		{call(`{"name":"list_test_tasks","arguments":{"q":"` + "\xff" + `"}}`), false},
		{call(`{"name":"list_test_tasks","arguments":{"q":"\ud800"}}`), false},
		{call(`{"name":"list_test_tasks","arguments":{"q":` + deep + `}}`), false},
		{`{not json`, false},
	}
	type variant struct {
		name    string
		headers map[string]string
		fast    bool
	}
	variants := []variant{}
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", ""} {
		variants = append(variants, variant{"version " + v, map[string]string{"Mcp-Protocol-Version": v}, strings.HasPrefix(v, "2025")})
	}
	variants = append(variants,
		variant{"accept json only", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Accept": "application/json"}, false},
		variant{"accept */*", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Accept": "*/*"}, true},
		variant{"text/plain body", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Content-Type": "text/plain"}, false},
		variant{"json with charset", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Content-Type": "application/json; charset=utf-8"}, true},
		variant{"another user", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "X-Test-User": "mallory"}, true},
	)
	served := 0
	for _, v := range variants {
		for i, b := range bodies {
			name := fmt.Sprintf("%s, body %d", v.name, i)
			before := p.srv.FastPathServed()
			f := send(p.fast, b.body, v.headers)
			if got, want := p.srv.FastPathServed()-before, v.fast && b.fast; got != 0 != want {
				t.Errorf("%s: the fast path served %d requests, want %v: %s", name, got, want, b.body)
			}
			before = p.srv.FastPathServed()
			s := send(p.sdk, b.body, v.headers)
			if p.srv.FastPathServed() != before {
				t.Fatalf("%s: the fast path served with NoFastPath", name)
			}
			if d := differ(f, s); d != "" {
				t.Errorf("%s: %s", name, d)
			}
			if v.fast && b.fast {
				served++
			}
		}
	}
	if served < 100 {
		t.Errorf("the fast path served only %d requests; the comparison is too thin", served)
	}
}

// TestRequestsAreReadAsTheSDKReadsThem pins what the bodies that
// encoding/json would read differently from the SDK do, on both paths.
func TestRequestsAreReadAsTheSDKReadsThem(t *testing.T) {
	t.Parallel()
	p := newTwoPaths(t)
	v := map[string]string{"Mcp-Protocol-Version": "2025-06-18"}
	tests := []struct {
		name, body string
		status     int
		want       []string // substrings of the reply
		not        []string
	}{
		{"method and Method: the exact key wins", `{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
			200, []string{`"tools":[`}, []string{`"structuredContent"`}},
		{"name and Name: the exact key names the tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","Name":"list_test_tasks","arguments":{"taskId":"` + p.taskID + `"}}}`,
			200, []string{`"caseCount":1`}, []string{`"tasks"`}},
		{"duplicate method", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"list_test_tasks"}}`,
			400, []string{`"code":-32700`, `PARSE_ERROR`, `"id":null`}, nil},
		{"duplicate key in the arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"x","taskId":"` + p.taskID + `"}}}`,
			400, []string{`PARSE_ERROR`}, nil},
		{"an id beyond 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
			400, []string{`"code":-32600`, `INVALID_REQUEST: the request id 9007199254740993 cannot be echoed exactly`, `"id":null`}, nil},
		{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
			400, []string{`INVALID_REQUEST`}, nil},
		{"an id in exponent notation", `{"jsonrpc":"2.0","id":1e2,"method":"tools/list"}`,
			400, []string{`INVALID_REQUEST`}, nil},
		{"a fractional id in a batch", `[{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}]`,
			400, []string{`INVALID_REQUEST`}, nil},
		{"the largest exact id", `{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
			200, []string{`"id":9007199254740991,`}, nil},
		{"a string id", `{"jsonrpc":"2.0","id":"9007199254740993","method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
			200, []string{`"id":"9007199254740993",`}, nil},
	}
	for _, tt := range tests {
		for path, h := range map[string]http.Handler{"fast": p.fast, "sdk": p.sdk} {
			r := send(h, tt.body, v)
			if r.status != tt.status {
				t.Errorf("%s (%s path): status %d, want %d: %s", tt.name, path, r.status, tt.status, r.body)
			}
			for _, w := range tt.want {
				if !bytes.Contains(r.body, []byte(w)) {
					t.Errorf("%s (%s path): no %s in %s", tt.name, path, w, r.body)
				}
			}
			for _, w := range tt.not {
				if bytes.Contains(r.body, []byte(w)) {
					t.Errorf("%s (%s path): %s in %s", tt.name, path, w, r.body)
				}
			}
		}
	}
}

// TestFastPathNeverRunsACallTwice: once the tool has run, the fast path
// answers, even when it cannot encode the result; it never hands the
// request to the SDK to run the tool again.
func TestFastPathNeverRunsACallTwice(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32

	tool := catalog.Define("count_runs", "Count runs", "counts its runs; its content cannot be encoded", catalog.Annotations{}, nil,
		func(ctx context.Context, _ *catalog.Env, _ struct{}) (textOut, error) {
			n := runs.Add(1)
			mcpserver.SetContent(ctx, &mcp.TextContent{Text: "x", Meta: mcp.Meta{"unencodable": make(chan int)}})
			return textOut{N: n}, nil
		})
	p := newTwoPaths(t, tool)
	before := p.srv.FastPathServed()
	replied := make(chan reply, 1)
	go func() {
		replied <- send(p.fast, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_runs","arguments":{}}}`, map[string]string{"Mcp-Protocol-Version": "2025-06-18"})
	}()
	var r reply
	select {
	case r = <-replied:
	case <-time.After(20 * time.Second):
		t.Fatalf("no reply within 20s; the tool ran %d times", runs.Load())
	}
	if p.srv.FastPathServed() != before+1 {
		t.Fatalf("the fast path did not take the call")
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times for one request", n)
	}
	var e struct {
		ID    int
		Error struct{ Message string }
	}
	json.Unmarshal(r.body, &e)
	if r.status != 500 || e.ID != 1 || !strings.HasPrefix(e.Error.Message, "INTERNAL") {
		t.Fatalf("got %d %s, want a 500 JSON-RPC internal error for id 1", r.status, r.body)
	}
}

type textOut struct{ N int32 }

func (o textOut) Text() string { return fmt.Sprint(o.N) }

// FuzzFastPathMatchesSDK feeds the same bytes to the fast path and to the
// SDK path and requires the same reply, byte for byte. A first request
// through the SDK takes any state change (start_test_run creates a run; the
// two compared requests then both replay it).
func FuzzFastPathMatchesSDK(f *testing.F) {
	p := newTwoPaths(f)
	// "2026-07-28+" is a 2026-07-28 client's complete headers (Mcp-Method,
	// and Mcp-Name naming get_test_task): what the fast path serves of
	// that revision.
	versions := []string{"2025-06-18", "2025-03-26", "2025-11-25", "2026-07-28", "", "2026-07-28+"}
	const triple = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"f","version":"1"}}`
	id := p.taskID
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"` + id + `"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"list_test_tasks","arguments":{"limit":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_test_cases","arguments":{"taskId":"` + id + `"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"start_test_run","arguments":{"taskId":"` + id + `","idempotencyKey":"k1"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + conformance.ToolMixed + `"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + conformance.ToolError + `","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","Method":"tools/list","params":{"Name":"x","name":"list_test_tasks"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_test_tasks","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`,
		`{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/call","params":{"name":"list_test_tasks"}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"list_test_tasks"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"a","taskId":"b"}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"list_test_tasks"},"error":{"code":"x"}}`,
		`[{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"list_test_tasks"}}]`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"` + id + `"},` + triple + `}}`,
		`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":7},` + triple + `}}`,
	} {
		for v := range versions {
			f.Add(s, uint8(v))
		}
	}
	f.Fuzz(func(t *testing.T, body string, v uint8) {
		h := map[string]string{"Mcp-Protocol-Version": versions[int(v)%len(versions)]}
		if h["Mcp-Protocol-Version"] == "2026-07-28+" {
			h = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "get_test_task"}
		}
		send(p.sdk, body, h)
		fast := send(p.fast, body, h)
		sdk := send(p.sdk, body, h)
		if d := differ(fast, sdk); d != "" {
			t.Errorf("%q: %s", body, d)
		}
	})
}
