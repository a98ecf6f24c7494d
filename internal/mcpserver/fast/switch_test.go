package fast_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestFastPathSwitch: with the fast paths off (Options.FastPath,
// DUET_MCP_FAST_PATH=off) the go-sdk answers every request — the plain
// tools/call over HTTP and over stdio that they answer when on — with the
// same bytes.
func TestFastPathSwitch(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`
	var https, stdios [2]string
	for i, fp := range []mcpserver.FastPath{mcpserver.FastPathOn, mcpserver.FastPathOff} {
		srv := mcpserver.New(catalog.New(db, catalog.Options{}), mcpserver.Options{Codes: httpapi.Codes, FastPath: fp})
		h := srv.HTTPHandler(mcpserver.HTTPOptions{})
		r := send(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := duet.NewContextWithCaller(r.Context(), duet.Caller{UserID: "alice", Source: duet.SourceMCP, TraceID: "0123456789abcdef0123456789abcdef"})
			h.ServeHTTP(w, r.WithContext(ctx))
		}), call, map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
		if r.status != 200 || !strings.Contains(string(r.body), `"structuredContent"`) {
			t.Fatalf("FastPath %d, HTTP: %d %s", fp, r.status, r.body)
		}
		https[i] = string(r.body)
		afterHTTP := srv.FastPathServed()

		in := io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n"))
		out := &collected{}
		done := make(chan error, 1)
		pr, pw := io.Pipe()
		go func() { done <- srv.ServeStdio(t.Context(), duet.Caller{UserID: "alice"}, pr, out) }()
		io.Copy(pw, in)
		waitFor(t, out, `"id":1,`)
		io.WriteString(pw, call+"\n")
		pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		stdios[i] = newTraceRe.ReplaceAllString(out.text(), "")

		if want := map[mcpserver.FastPath]int64{mcpserver.FastPathOn: 1, mcpserver.FastPathOff: 0}[fp]; afterHTTP != want || srv.FastPathServed() != 2*want {
			t.Errorf("FastPath %d: the fast paths served %d HTTP and %d stdio calls, want %d each", fp, afterHTTP, srv.FastPathServed()-afterHTTP, want)
		}
	}
	if https[0] != https[1] || stdios[0] != stdios[1] {
		t.Errorf("on and off differ:\nHTTP  %s\n      %s\nstdio %s\n      %s", https[0], https[1], stdios[0], stdios[1])
	}
}

// waitFor waits until the server wrote s.
func waitFor(t *testing.T, out *collected, s string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.text(), s); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %s", s, out.text())
		}
	}
}
