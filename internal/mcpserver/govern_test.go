package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/mcpserver/fast"
	"github.com/duet-test/duet/internal/sqlite"
)

type records struct {
	mu   sync.Mutex
	recs []*duet.AuditRecord
}

func (r *records) Record(rec *duet.AuditRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *records) find(method, name string) []*duet.AuditRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*duet.AuditRecord
	for _, rec := range r.recs {
		if rec.Method == method && rec.Tool == name {
			out = append(out, rec)
		}
	}
	return out
}

// TestEveryMethodIsGoverned: resources/read and prompts/get go through the
// pipeline tools/call goes through — identity, concurrency caps (HTTP 429),
// a timeout, a result-size cap, an audit record — over HTTP and stdio.
func TestEveryMethodIsGoverned(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	audit := &records{}
	cat := catalog.New(db, catalog.Options{Auditor: audit, Limits: catalog.Limits{MaxPerCaller: 1, MaxResultBytes: 4096, Timeout: time.Second}})
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	text := func(uri, s string) *mcp.ReadResourceResult {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: s}}}
	}
	budget := 0
	setup := func(s *mcp.Server) {
		s.AddResource(&mcp.Resource{URI: "test://small", Name: "small"}, func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			budget = catalog.ResultBudget(ctx)
			c, _ := duet.CallerFromContext(ctx)
			return text(r.Params.URI, "hello "+c.UserID), nil
		})
		s.AddResource(&mcp.Resource{URI: "test://big", Name: "big"}, func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return text(r.Params.URI, strings.Repeat("x", 8192)), nil
		})
		s.AddResource(&mcp.Resource{URI: "test://held", Name: "held"}, func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			held <- struct{}{}
			<-hold
			return text(r.Params.URI, "released"), nil
		})
		s.AddResource(&mcp.Resource{URI: "test://stuck", Name: "stuck"}, func(ctx context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	prompts := []*mcpserver.Prompt{{Name: "long", Get: func(context.Context, duet.Caller, map[string]string) (string, error) {
		return strings.Repeat("p", 8192), nil
	}}, {Name: "short", Get: func(_ context.Context, c duet.Caller, _ map[string]string) (string, error) {
		return "for " + c.UserID, nil
	}}}
	s := mcpserver.New(cat, mcpserver.Options{Setup: setup, Prompts: prompts, Codes: httpapi.Codes})
	srv := httptest.NewServer(asUser(s.HTTPHandler(mcpserver.HTTPOptions{})))
	defer srv.Close()

	post := func(body string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Test-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	read := func(uri string) (int, string) {
		return post(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"` + uri + `"}}`)
	}
	if status, body := read("test://small"); status != 200 || !strings.Contains(body, "hello alice") || budget != 4096 {
		t.Errorf("small read: %d %s (budget %d)", status, body, budget)
	}
	if status, body := read("test://big"); status != 200 || !strings.Contains(body, `"code":-32013`) || !strings.Contains(body, "TOO_LARGE: the result is") {
		t.Errorf("8 KiB read with a 4 KiB cap: %d %s", status, body)
	}
	start := time.Now()
	if status, body := read("test://stuck"); !strings.Contains(body, "TIMEOUT: the call did not finish within 1s") || time.Since(start) > 10*time.Second {
		t.Errorf("stuck read: %d %s after %s", status, body, time.Since(start))
	}
	// A tools/call over HTTP runs in the slot its door took
	// (catalog.Request.Slot; the fast path's and the SDK handler's): with
	// one call per caller, a second slot would be refused.
	for i := range 2 {
		if status, body := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`); status != 200 || strings.Contains(body, "RATE_LIMITED") {
			t.Errorf("tools/call %d with one slot per caller: %d %s", i+1, status, body)
		}
	}
	// One call in flight per caller: a second read waits for nothing, it
	// gets 429 with Retry-After.
	done := make(chan string, 1)
	go func() { _, body := read("test://held"); done <- body }()
	<-held
	status, body := read("test://small")
	close(hold)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "RATE_LIMITED") {
		t.Errorf("a second read while one is in flight: %d %s", status, body)
	}
	if body := <-done; !strings.Contains(body, "released") {
		t.Errorf("the held read: %s", body)
	}
	getPrompt := func(name string) (int, string) {
		return post(`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"` + name + `"}}`)
	}
	if status, body := getPrompt("long"); status != 200 || !strings.Contains(body, "TOO_LARGE") {
		t.Errorf("a long prompt: %d %s", status, body)
	}
	if status, body := getPrompt("short"); status != 200 || !strings.Contains(body, "for alice") {
		t.Errorf("a short prompt: %d %s", status, body)
	}

	for _, want := range []struct {
		method, name string
		outcome      duet.Code
	}{
		{"resources/read", "test://small", duet.OutcomeOK},
		{"resources/read", "test://big", duet.CodeTooLarge},
		{"resources/read", "test://stuck", duet.CodeTimeout},
		{"resources/read", "test://small", duet.CodeRateLimited},
		{"resources/read", "test://held", duet.OutcomeOK},
		{"prompts/get", "long", duet.CodeTooLarge},
		{"prompts/get", "short", duet.OutcomeOK},
	} {
		found := false
		for _, r := range audit.find(want.method, want.name) {
			if r.Outcome == want.outcome && r.Caller == "alice" && r.CallSource == duet.SourceMCP && r.TraceID != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("no audit record %s %s → %s", want.method, want.name, want.outcome)
		}
	}

	// The same pipeline on stdio.
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go s.ServeStdio(ctx, duet.Caller{UserID: "carol"}, sr, sw)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://big"}); err == nil || !strings.Contains(err.Error(), "TOO_LARGE") {
		t.Errorf("stdio: 8 KiB read with a 4 KiB cap: %v", err)
	}
	if res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "test://small"}); err != nil || res.Contents[0].Text != "hello carol" {
		t.Errorf("stdio small read: %v %v", res, err)
	}
	if recs := audit.find("resources/read", "test://big"); len(recs) == 0 {
		t.Error("stdio: no audit record")
	} else if last := recs[len(recs)-1]; last.Caller != "carol" || last.CallSource != duet.SourceStdio || last.Outcome != duet.CodeTooLarge {
		t.Errorf("stdio audit record: %+v", last)
	}
	// A tools/call the stdio fast path answers (the SDK, in a run with the
	// fast paths off): audited with the session's caller, Source stdio and
	// a trace id.
	before := s.FastPathServed()
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("stdio call: %v %v", res, err)
	}
	if s.FastPathServed() != before+1 && !fast.OffInTests() {
		t.Error("stdio: the fast path did not serve the call")
	}
	if recs := audit.find("tools/call", "list_test_tasks"); len(recs) == 0 {
		t.Error("stdio: no audit record of the call")
	} else if last := recs[len(recs)-1]; last.Caller != "carol" || last.CallSource != duet.SourceStdio || last.Outcome != duet.OutcomeOK || last.TraceID == "" {
		t.Errorf("stdio call audit record: %+v", last)
	}
	// The handshake (server/discover for this client) is governed too.
	if len(audit.find("server/discover", ""))+len(audit.find("initialize", "")) == 0 {
		b, _ := json.Marshal(audit.recs)
		t.Errorf("the handshake is not audited: %s", b)
	}
}
