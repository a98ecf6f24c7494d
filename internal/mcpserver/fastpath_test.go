package mcpserver_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/conformance"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestFastPathIsByteEquivalent sends every request both through the fast
// path and through the SDK alone and requires the same status, headers and
// body, byte for byte.
func TestFastPathIsByteEquivalent(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Characters JSON encoders treat differently: <, >, &, quotes, unicode.
	src := "task: {name: \"shop <&> \\\"x\\\"\", description: \"ünïcode ✓ <b>&amp;</b> \\u2028\"}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"
	s, err := compiler.CompileSuite(t.Context(), []byte(src), "", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	// The conformance fixtures include tools that replace their content
	// blocks (images, audio, embedded resources).
	srv := mcpserver.New(catalog.New(db, catalog.Options{Extra: conformance.New().Tools}), mcpserver.Options{})
	fixed := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := duet.NewContextWithCaller(r.Context(), duet.Caller{UserID: r.Header.Get("X-Test-User"), Source: duet.SourceMCP, TraceID: "0123456789abcdef0123456789abcdef"})
			h.ServeHTTP(w, r.WithContext(ctx))
		})
	}
	fast := httptest.NewServer(fixed(srv.HTTPHandler(mcpserver.HTTPOptions{})))
	defer fast.Close()
	sdk := httptest.NewServer(fixed(srv.HTTPHandler(mcpserver.HTTPOptions{NoFastPath: true})))
	defer sdk.Close()

	id := res.Task.ID
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	}
	bodies := []string{
		call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"}}`),
		call(`{"name":"list_test_tasks","arguments":{}}`),
		call(`{"name":"` + conformance.ToolImage + `","arguments":{}}`),
		call(`{"name":"` + conformance.ToolMixed + `","arguments":{}}`),
		call(`{"name":"` + conformance.ToolAudio + `"}`),
		call(`{"name":"list_test_tasks"}`),
		call(`{"name":"list_test_tasks","arguments":null}`),
		call(`{"name":"list_test_cases","arguments":{"taskId":"` + id + `","limit":1}}`),
		call(`{"name":"get_test_task","arguments":{"taskId":"task_missing"}}`),
		call(`{"name":"get_test_task","arguments":{"taskId":42}}`),
		call(`{"name":"get_test_task","arguments":{"taskId":"x","extra":true}}`),
		call(`{"name":"get_test_task","arguments":[1]}`),
		call(`{"name":"no_such_tool","arguments":{}}`),
		call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`),
		call(`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"progressToken":"p"}}`),
		`{"jsonrpc":"2.0","id":"str-<id>&","method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"1.0","id":2,"method":"tools/call","params":{"name":"list_test_tasks"}}`,
		`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks"}}]`,
		`  ` + call(`{"name":"get_test_task","arguments":{"taskId":"`+id+`"}}`) + "\n",
	}
	type variant struct {
		name    string
		headers map[string]string
	}
	variants := []variant{}
	for _, v := range []string{"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", ""} {
		variants = append(variants, variant{"version " + v, map[string]string{"Mcp-Protocol-Version": v}})
	}
	variants = append(variants,
		variant{"accept json only", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Accept": "application/json"}},
		variant{"accept */*", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Accept": "*/*"}},
		variant{"text/plain body", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Content-Type": "text/plain"}},
		variant{"json with charset", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "Content-Type": "application/json; charset=utf-8"}},
		variant{"another user", map[string]string{"Mcp-Protocol-Version": "2025-06-18", "X-Test-User": "mallory"}},
	)
	send := func(url, body string, headers map[string]string) (int, http.Header, []byte) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
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
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	fastServed := 0
	for _, v := range variants {
		for i, body := range bodies {
			fs, fh, fb := send(fast.URL, body, v.headers)
			ss, sh, sb := send(sdk.URL, body, v.headers)
			name := fmt.Sprintf("%s, body %d", v.name, i)
			if fs != ss || !bytes.Equal(fb, sb) {
				t.Errorf("%s: fast path %d %s\nSDK       %d %s", name, fs, fb, ss, sb)
				continue
			}
			for _, h := range []string{"Content-Type", "Cache-Control", "Mcp-Session-Id", "Content-Length"} {
				if fh.Get(h) != sh.Get(h) {
					t.Errorf("%s: header %s: fast path %q, SDK %q", name, h, fh.Get(h), sh.Get(h))
				}
			}
			if fs == 200 && bytes.Contains(fb, []byte(`"result"`)) {
				fastServed++
			}
		}
	}
	if fastServed < 40 {
		t.Errorf("only %d requests were answered with a result; the comparison is too thin", fastServed)
	}
}
