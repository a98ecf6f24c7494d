package httpapi_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

type auditLog struct {
	mu   sync.Mutex
	recs []*duet.AuditRecord
}

func (a *auditLog) Record(r *duet.AuditRecord) {
	a.mu.Lock()
	a.recs = append(a.recs, r)
	a.mu.Unlock()
}

func (a *auditLog) all() []*duet.AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*duet.AuditRecord(nil), a.recs...)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSessionsAreBoundToTheirPrincipal: in sessions mode, a session
// belongs to the identity that created it — the user and how they
// authenticated. Anyone else naming it (POST, GET, DELETE) gets exactly the
// answer an unknown session gets, acts as no one, and cannot end it; the
// audit never names the owner for their requests; session ids are logged
// nowhere.
func TestSessionsAreBoundToTheirPrincipal(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, _ := compiler.CompileSuite(t.Context(), []byte("task: {name: alices-shop}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"), "", compiler.Options{})
	if _, err := db.ApplySuite(t.Context(), "alice", s); err != nil {
		t.Fatal(err)
	}
	plain, hash := auth.NewToken()
	if err := db.CreateToken(t.Context(), &duet.Token{UserID: "alice", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	audit := &auditLog{}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cat := catalog.New(db, catalog.Options{Auditor: audit, Logger: log})
	h := httpapi.New(httpapi.Options{Catalog: cat, Sessions: true, Logger: log, Auth: auth.New(db, []string{key}, ""),
		MCP: mcpserver.New(cat, mcpserver.Options{Version: "test", Codes: httpapi.Codes, Logger: log})})
	srv := httptest.NewServer(h)
	defer srv.Close()

	alice := map[string]string{"X-Api-Key": key, "SSO-Emp-Id": "alice"}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/http", HTTPClient: &http.Client{Transport: hdrs(alice)}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	sid := cs.ID()
	if sid == "" {
		t.Fatal("no session id: not in sessions mode")
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("alice in her session: %v %v", res, err)
	}
	aliceRecords := func() int {
		n := 0
		for _, r := range audit.all() {
			if r.Caller == "alice" && r.Outcome == duet.OutcomeOK {
				n++
			}
		}
		return n
	}
	before := aliceRecords()

	do := func(method, sessionID string, headers map[string]string, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/mcp/http", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", sessionID)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`
	bob := map[string]string{"X-Api-Key": key, "SSO-Emp-Id": "bob"}
	aliceByToken := map[string]string{"Authorization": "Bearer " + plain}
	for who, creds := range map[string]map[string]string{"bob": bob, "alice with a token instead of the gateway": aliceByToken} {
		for _, method := range []string{"POST", "GET", "DELETE"} {
			body := ""
			if method == "POST" {
				body = call
			}
			status, got := do(method, sid, creds, body)
			ustatus, unknown := do(method, "no-such-session", creds, body)
			if status != http.StatusNotFound || status != ustatus || got != unknown {
				t.Errorf("%s, %s with alice's session: %d %s\nwith an unknown session: %d %s", who, method, status, got, ustatus, unknown)
			}
			if strings.Contains(got, "alices-shop") {
				t.Errorf("%s, %s read alice's tasks: %s", who, method, got)
			}
		}
	}
	// Alice's session survived the DELETEs, and still answers her.
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("alice after the others' DELETE: %v %v", res, err)
	}
	if n := aliceRecords(); n != before+1 {
		t.Errorf("the audit has %d calls by alice for her one call after the others' requests", n-before)
	}
	refusals := 0
	for _, r := range audit.all() {
		if r.Caller == "bob" && r.Outcome == duet.CodeNotFound {
			refusals++
		}
		if strings.Contains(r.Method+r.Tool+r.TraceID, sid) {
			t.Errorf("an audit record holds the session id: %+v", r)
		}
	}
	if refusals != 6 {
		t.Errorf("%d audited refusals of bob, want 6", refusals)
	}
	if l := logs.String(); strings.Contains(l, sid) || !strings.Contains(l, "session_id=[redacted]") {
		t.Errorf("the session id is in the log (or the log saw no session):\n%s", l)
	}
}
