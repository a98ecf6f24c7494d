package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/vault"
)

type env struct {
	c     *mcpclient.Client
	db    *sqlite.DB
	keys  *atomic.Pointer[vault.Keyring]
	loads atomic.Int64
	clock *testClock // the OAuth clock of e.c and of e's other processes
}

// testClock is the OAuth client's clock in tests (Options.Now): real time
// plus how far the test moved it, so that tokens expire without sleeping.
type testClock struct{ ahead atomic.Int64 }

func (c *testClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// Advance moves the clock d forward.
func (c *testClock) Advance(d time.Duration) { c.ahead.Add(int64(d)) }

type envOpt func(*mcpclient.Options)

func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _ := vault.GenerateKey()
	kr, err := vault.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, keys: &atomic.Pointer[vault.Keyring]{}, clock: &testClock{}}
	e.keys.Store(kr)
	o := mcpclient.Options{
		Store:       db,
		Keyring:     func() (*vault.Keyring, error) { e.loads.Add(1); return e.keys.Load(), nil },
		Policy:      netguard.Policy{AllowLoopback: true},
		CallTimeout: 10 * time.Second,
		Now:         e.clock.Now,
	}
	for _, f := range opts {
		f(&o)
	}
	e.c = mcpclient.New(o)
	t.Cleanup(func() { e.c.Close() })
	return e
}

// register registers url for owner under name and syncs its catalog.
func (e *env) register(t testing.TB, owner, name, url string, headers map[string]string) *duet.MCPServer {
	t.Helper()
	s, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: owner, Name: name, URL: url, Headers: headers})
	if err != nil {
		t.Fatalf("Register %s: %v", url, err)
	}
	synced, err := e.c.Sync(t.Context(), owner, name)
	if err != nil {
		t.Fatalf("Sync %s: %v", url, err)
	}
	if synced.ServerKey != s.ServerKey || synced.SyncedAt == nil {
		t.Fatalf("Sync: got %+v", synced)
	}
	return synced
}

func (e *env) invoke(t *testing.T, owner, key, tool string, args map[string]any) (*duet.ToolResult, error) {
	t.Helper()
	return e.c.Invoke(t.Context(), duet.InvokeRequest{Executor: owner, ServerKey: key, Tool: tool, Arguments: args, Source: duet.SourceCLI})
}

func structured(t *testing.T, r *duet.ToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.StructuredContent, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", r.StructuredContent, err)
	}
	return m
}

// TestServers calls real servers over every transport the client supports.
func TestServers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		handler       func() (string, *mcptest.Counters)
		wantTransport string
		wantProtocol  string
	}{
		{"stateful SSE replies", func() (string, *mcptest.Counters) {
			n := &mcptest.Counters{}
			return mcptest.Start(t, mcptest.Streamable(mcptest.NewServer("stateful", n), false, false)) + "/mcp", n
		}, duet.TransportStreamableHTTP, "2025-11-25"},
		{"stateful JSON replies", func() (string, *mcptest.Counters) {
			n := &mcptest.Counters{}
			return mcptest.Start(t, mcptest.Streamable(mcptest.NewServer("stateful-json", n), false, true)) + "/mcp", n
		}, duet.TransportStreamableHTTP, "2025-11-25"},
		{"stateless 2026-07-28 JSON replies", func() (string, *mcptest.Counters) {
			n := &mcptest.Counters{}
			return mcptest.Start(t, mcptest.Streamable(mcptest.NewServer("stateless", n), true, true)) + "/mcp", n
		}, duet.TransportStreamableHTTP, "2026-07-28"},
		{"stateless 2026-07-28 SSE replies", func() (string, *mcptest.Counters) {
			n := &mcptest.Counters{}
			return mcptest.Start(t, mcptest.Streamable(mcptest.NewServer("stateless-sse", n), true, false)) + "/mcp", n
		}, duet.TransportStreamableHTTP, "2026-07-28"},
		{"legacy HTTP+SSE", func() (string, *mcptest.Counters) {
			n := &mcptest.Counters{}
			return mcptest.Start(t, mcptest.LegacySSE(mcptest.NewServer("legacy", n))) + "/sse", n
		}, duet.TransportSSE, "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			url, n := tt.handler()
			reg := e.register(t, "alice", "calc", url, nil)
			if reg.Transport != tt.wantTransport || reg.ProtocolVersion != tt.wantProtocol || reg.ToolCount != 4 || reg.CatalogHash == "" {
				t.Fatalf("after sync: got transport %q protocol %q tools %d hash %q, want %q %q 4",
					reg.Transport, reg.ProtocolVersion, reg.ToolCount, reg.CatalogHash, tt.wantTransport, tt.wantProtocol)
			}
			for i := range 3 {
				res, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": i, "b": 40})
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if got, want := res.Text(), fmt.Sprintf("%d+40=%d", i, i+40); got != want {
					t.Errorf("text: got %q, want %q", got, want)
				}
				// The big number passes through exactly (a float64 would
				// round it) wherever the reply is captured raw.
				if tt.wantTransport != duet.TransportSSE && !strings.Contains(string(res.StructuredContent), fmt.Sprint(mcptest.BigNumber)) {
					t.Errorf("structuredContent: got %s, want big %d unchanged", res.StructuredContent, mcptest.BigNumber)
				}
				if got := structured(t, res)["sum"]; got != float64(i+40) {
					t.Errorf("sum: got %v, want %d", got, i+40)
				}
			}
			// One session (besides the sync's) served the three calls.
			if tt.wantProtocol != "2026-07-28" {
				if got := n.Initialize.Load(); got != 2 {
					t.Errorf("initialize requests: got %d, want 2 (sync + one reused session)", got)
				}
			}
			if got := n.Calls.Load(); got != 3 {
				t.Errorf("tools/call requests: got %d, want 3", got)
			}
		})
	}
}

func TestSampleOrderServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	orders := sample.NewOrders()
	url, stop, err := sample.StartOrderServer(t.Context(), "127.0.0.1:0", orders, "s3cret-token")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	reg := e.register(t, "alice", "orders", url, map[string]string{"Authorization": "Bearer s3cret-token"})
	if reg.ToolCount != 3 || reg.ServerName != "duet-sample-orders" {
		t.Fatalf("got %+v", reg)
	}
	_, tools, err := e.c.Server(t.Context(), "alice", "orders")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if len(tool.InputSchema) == 0 || len(tool.OutputSchema) == 0 || len(tool.Annotations) == 0 {
			t.Errorf("tool %s: got schema %s output %s annotations %s, want all kept", tool.Name, tool.InputSchema, tool.OutputSchema, tool.Annotations)
		}
	}
	assets, err := e.c.MCPAssets(t.Context(), "alice")
	if err != nil || len(assets) != 1 || assets[0].ServerKey != reg.ServerKey || len(assets[0].Tools) != 3 || len(assets[0].Tools[0].InputSchema) == 0 {
		t.Fatalf("MCPAssets: got %+v, %v", assets, err)
	}
	if b, _ := json.Marshal(assets); strings.Contains(string(b), "s3cret") || strings.Contains(string(b), "127.0.0.1") {
		t.Errorf("assets show a URL or a credential: %s", b)
	}
	res, err := e.invoke(t, "alice", reg.ServerKey, sample.ToolQueryOrder, map[string]any{"orderId": "A1001"})
	if err != nil {
		t.Fatal(err)
	}
	order, _ := structured(t, res)["order"].(map[string]any)
	want, _ := orders.Get("A1001")
	if order["status"] != string(want.Status) || order["id"] != "A1001" {
		t.Fatalf("got %s", res.StructuredContent)
	}
	// A domain failure is a tool error with the result.
	res, err = e.invoke(t, "alice", reg.ServerKey, sample.ToolQueryOrder, map[string]any{"orderId": "Z9"})
	if duet.ErrorCode(err) != duet.CodeMCPToolError || res == nil || !res.IsError || !strings.Contains(res.Text(), "NOT_FOUND") {
		t.Fatalf("unknown order: got %v, %+v", err, res)
	}

	// bob registers the same address: same serverKey, his own credentials.
	bobReg, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "bob", Name: "order-svc", URL: strings.ToUpper(url[:4]) + url[4:],
		Headers: map[string]string{"Authorization": "Bearer wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	if bobReg.ServerKey != reg.ServerKey {
		t.Fatalf("serverKeys differ: %s, %s", bobReg.ServerKey, reg.ServerKey)
	}
	_, err = e.c.Sync(t.Context(), "bob", "order-svc")
	if duet.ErrorCode(err) != duet.CodeMCPAuthFailed {
		t.Fatalf("bob's sync with a wrong token: got %v, want MCP_AUTH_FAILED", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error quotes the credential: %v", err)
	}
	// carol has nothing registered: her call never uses alice's.
	_, err = e.invoke(t, "carol", reg.ServerKey, sample.ToolQueryOrder, map[string]any{"orderId": "A1001"})
	if duet.ErrorCode(err) != duet.CodeMCPServerNotConfigured {
		t.Fatalf("carol: got %v, want MCP_SERVER_NOT_CONFIGURED", err)
	}
	// no credentials at all
	if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "dave", Name: "orders", URL: url}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Sync(t.Context(), "dave", "orders"); duet.ErrorCode(err) != duet.CodeMCPAuthFailed || !strings.Contains(err.Error(), "without credentials") {
		t.Fatalf("dave: got %v, want MCP_AUTH_FAILED saying there are no credentials", err)
	}
}

// TestDiagnosis registers endpoints that are not MCP servers and checks the
// errors say what they are.
func TestDiagnosis(t *testing.T) {
	t.Parallel()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedURL := "http://" + closed.Addr().String() + "/mcp"
	closed.Close()
	tests := []struct {
		name string
		url  func() string
		code duet.Code
		want []string
	}{
		{"MCP-Lite", func() string { return mcptest.Start(t, mcptest.Lite()) + "/mcp" }, duet.CodeMCPProtocolMismatch,
			[]string{"MCP-Lite endpoint", "/mcp/tools/list", "1 tools"}},
		{"MCP-Lite call route", func() string { return mcptest.Start(t, mcptest.Lite()) + "/mcp/tools/call" }, duet.CodeMCPProtocolMismatch,
			[]string{"MCP-Lite"}},
		{"plain REST", func() string { return mcptest.Start(t, mcptest.REST()) + "/api/orders" }, duet.CodeMCPProtocolMismatch,
			[]string{"plain JSON", "no jsonrpc field", "orders, total", "REST API"}},
		{"HTML", func() string { return mcptest.Start(t, mcptest.HTML()) + "/" }, duet.CodeMCPProtocolMismatch,
			[]string{"HTML page", `"Orders Portal"`}},
		{"login redirect", func() string { return mcptest.Start(t, mcptest.LoginRedirect()) + "/mcp" }, duet.CodeMCPProtocolMismatch,
			[]string{"redirect (302)", "/sso/login", "login page"}},
		{"nothing listening", func() string { return closedURL }, duet.CodeMCPUnreachable, []string{"connection refused"}},
		{"bearer required", func() string {
			return mcptest.Start(t, mcptest.RequireBearer("tok", mcptest.Streamable(mcptest.NewServer("x", nil), false, false)))
		}, duet.CodeMCPAuthFailed, []string{"401", "Bearer authentication", "without credentials"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "x", URL: tt.url()}); err != nil {
				t.Fatal(err)
			}
			_, err := e.c.Sync(t.Context(), "alice", "x")
			if duet.ErrorCode(err) != tt.code {
				t.Fatalf("got %v, want %s", err, tt.code)
			}
			msg := duet.ErrorMessage(err)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "state=abc123") {
				t.Errorf("message %q leaks the redirect's query", msg)
			}
		})
	}
}

func TestCallErrors(t *testing.T) {
	t.Parallel()
	// The timeout applies to every request, the handshake too: generous
	// enough for a loaded machine, short enough for the test.
	e := newEnv(t, func(o *mcpclient.Options) { o.CallTimeout = 3 * time.Second })
	url := mcptest.Start(t, mcptest.Streamable(mcptest.NewServer("calc", nil), false, false))
	reg := e.register(t, "alice", "calc", url, nil)
	// Open the session first, so that the timeout applies to the call.
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	_, err := e.invoke(t, "alice", reg.ServerKey, "slow", nil)
	if duet.ErrorCode(err) != duet.CodeMCPCallTimeout || !strings.Contains(err.Error(), "3s") {
		t.Fatalf("slow: got %v, want MCP_CALL_TIMEOUT", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timeout took %s", d)
	}
	res, err := e.invoke(t, "alice", reg.ServerKey, "fail", nil)
	if duet.ErrorCode(err) != duet.CodeMCPToolError || res == nil || !res.IsError || res.Text() != "FAILED: on purpose" ||
		!strings.Contains(string(res.StructuredContent), `"FAILED"`) {
		t.Fatalf("fail: got %v, %+v", err, res)
	}
	if _, err := e.invoke(t, "alice", reg.ServerKey, "nope", nil); duet.ErrorCode(err) != duet.CodeMCPToolNotFound {
		t.Fatalf("nope: got %v, want MCP_TOOL_NOT_FOUND", err)
	}
	if _, err := e.invoke(t, "bob", reg.ServerKey, "add", nil); duet.ErrorCode(err) != duet.CodeMCPServerNotConfigured {
		t.Fatalf("bob: got %v, want MCP_SERVER_NOT_CONFIGURED", err)
	}
	// The session still works after the timeout.
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 2}); err != nil {
		t.Fatalf("add after timeout: %v", err)
	}
	// Elicitation: a form whose required fields have defaults is accepted
	// with them.
	res, err = e.invoke(t, "alice", reg.ServerKey, "ask", nil)
	if err != nil || !strings.HasPrefix(res.Text(), "accept ") || !strings.Contains(res.Text(), `"name":"Duet"`) || !strings.Contains(res.Text(), `"count":3`) {
		t.Fatalf("ask: got %v, %v", res, err)
	}

	e.c.Flush()
	recs, err := e.db.FindInvocations(t.Context(), duet.InvocationFilter{Executor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[duet.Code]int{}
	for _, r := range recs {
		outcomes[r.Outcome]++
		if r.TraceID == "" || r.Source != duet.SourceCLI || r.ServerKey != reg.ServerKey || r.DurationUs <= 0 || r.ArgBytes < 2 {
			t.Errorf("record %+v", r)
		}
	}
	want := map[duet.Code]int{duet.CodeMCPCallTimeout: 1, duet.CodeMCPToolError: 1, duet.CodeMCPToolNotFound: 1, duet.OutcomeOK: 3}
	for c, n := range want {
		if outcomes[c] != n {
			t.Errorf("records with outcome %s: got %d, want %d (all: %v)", c, outcomes[c], n, outcomes)
		}
	}
	if recs, _ := e.db.FindInvocations(t.Context(), duet.InvocationFilter{Executor: "bob"}); len(recs) != 1 || recs[0].Outcome != duet.CodeMCPServerNotConfigured {
		t.Errorf("bob's records: got %+v", recs)
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	url := mcptest.Start(t, mcptest.Streamable(mcptest.ManyTools(1234, 100), true, true))
	reg := e.register(t, "alice", "many", url, nil)
	if reg.ToolCount != 1234 {
		t.Fatalf("tools: got %d, want 1234", reg.ToolCount)
	}
	_, tools, err := e.c.Server(t.Context(), "alice", "many")
	if err != nil || len(tools) != 1234 || tools[0].Name != "tool_0000" || tools[1233].Name != "tool_1233" {
		t.Fatalf("archive: got %d tools, %v", len(tools), err)
	}
	res, err := e.invoke(t, "alice", reg.ServerKey, "tool_1233", nil)
	if err != nil || res.Text() != "tool_1233" {
		t.Fatalf("last tool: got %v, %v", res, err)
	}
	// The hash is stable across syncs of an unchanged catalog.
	again, err := e.c.Sync(t.Context(), "alice", "many")
	if err != nil || again.CatalogHash != reg.CatalogHash {
		t.Fatalf("resync: got %v, %v; want hash %s", again, err, reg.CatalogHash)
	}
}

func TestListChanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := mcptest.NewServer("changing", nil)
	url := mcptest.Start(t, mcptest.Streamable(srv, false, false))
	reg := e.register(t, "alice", "changing", url, nil)
	// A call opens the session that will hear the notification.
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	srv.AddTool(&mcp.Tool{Name: "fresh", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fresh"}}}, nil
		})
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, _, err := e.c.Server(t.Context(), "alice", "changing")
		if err != nil {
			t.Fatal(err)
		}
		if s.ToolCount == 5 {
			if s.CatalogHash == reg.CatalogHash {
				t.Errorf("hash did not change")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog not re-synced after tools/list_changed: %d tools", s.ToolCount)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res, err := e.invoke(t, "alice", reg.ServerKey, "fresh", nil); err != nil || res.Text() != "fresh" {
		t.Fatalf("fresh: got %v, %v", res, err)
	}
}

func TestSSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *mcpclient.Options) { o.Policy = netguard.Policy{} })
	url := mcptest.Start(t, mcptest.Streamable(mcptest.NewServer("x", nil), true, true))
	for _, u := range []string{url, "http://169.254.169.254/latest/meta-data", "http://10.1.2.3/mcp", "http://localhost:1/mcp"} {
		_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "x", URL: u})
		if duet.ErrorCode(err) != duet.CodeURLRefused {
			t.Errorf("%s: got %v, want URL_REFUSED", u, err)
		}
	}
	// A URL that carries a credential is refused with advice.
	_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "x", URL: "https://mcp.example.com/mcp?api_key=abc"})
	if duet.ErrorCode(err) != duet.CodeURLRefused || !strings.Contains(err.Error(), "header") || strings.Contains(err.Error(), "abc") {
		t.Errorf("api_key in the URL: got %v", err)
	}
	// A registration made while loopback was allowed is still refused at
	// call time.
	e2 := newEnv(t)
	reg := e2.register(t, "alice", "x", url, nil)
	strict := mcpclient.New(mcpclient.Options{Store: e2.db, Policy: netguard.Policy{}})
	defer strict.Close()
	_, err = strict.Invoke(t.Context(), duet.InvokeRequest{Executor: "alice", ServerKey: reg.ServerKey, Tool: "add", Source: duet.SourceCLI,
		Arguments: map[string]any{"a": 1, "b": 2}})
	if duet.ErrorCode(err) != duet.CodeURLRefused || !strings.Contains(err.Error(), netguard.EnvAllowLoopback) {
		t.Fatalf("call to loopback: got %v, want URL_REFUSED naming %s", err, netguard.EnvAllowLoopback)
	}
}

func TestCredentialsAndRewrap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old, _ := vault.GenerateKey()
	kr1, _ := vault.NewKeyring(old)
	e.keys.Store(kr1)
	url := mcptest.Start(t, mcptest.RequireBearer("tok-1", mcptest.Streamable(mcptest.NewServer("x", nil), false, false)))
	reg := e.register(t, "alice", "x", url, map[string]string{"authorization": "Bearer tok-1"})
	if len(reg.HeaderNames) != 1 || reg.HeaderNames[0] != "Authorization" || reg.CredentialRef == "" {
		t.Fatalf("got %+v", reg)
	}
	cred, err := e.db.FindCredential(t.Context(), reg.CredentialRef)
	if err != nil || strings.Contains(string(cred.Ciphertext), "tok-1") || cred.Owner != "alice" || cred.ServerKey != reg.ServerKey {
		t.Fatalf("credential: %+v, %v", cred, err)
	}

	// Another process (duet vault rotate) rotates the key and re-encrypts.
	newKey, _ := vault.GenerateKey()
	kr2, _ := vault.NewKeyring(newKey, old)
	rotator := mcpclient.New(mcpclient.Options{Store: e.db, Keyring: func() (*vault.Keyring, error) { return kr2, nil }})
	defer rotator.Close()
	res, err := rotator.Rewrap(t.Context())
	if err != nil || res.Total != 1 || res.Rewrapped != 1 || res.PrimaryID != vault.KeyID(newKey) {
		t.Fatalf("rewrap: got %+v, %v", res, err)
	}
	if res, err := rotator.Rewrap(t.Context()); err != nil || res.Rewrapped != 0 {
		t.Fatalf("second rewrap: got %+v, %v", res, err)
	}
	// This process still holds only the old key; the new ciphertext makes it
	// reload the keyring (which now has only the new key).
	kr3, _ := vault.NewKeyring(newKey)
	e.keys.Store(kr3)
	loads := e.loads.Load()
	if _, err := e.c.Sync(t.Context(), "alice", "x"); err != nil {
		t.Fatalf("sync after rotation: %v", err)
	}
	if e.loads.Load() != loads+1 {
		t.Errorf("keyring loads: got %d, want %d", e.loads.Load(), loads+1)
	}

	// A ciphertext moved to another owner's row does not open.
	if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "bob", Name: "x", URL: url,
		Headers: map[string]string{"Authorization": "Bearer other"}}); err != nil {
		t.Fatal(err)
	}
	bob, _, _ := e.c.Server(t.Context(), "bob", "x")
	aliceCred, _ := e.db.FindCredential(t.Context(), reg.CredentialRef)
	bobCred, _ := e.db.FindCredential(t.Context(), bob.CredentialRef)
	bobCred.Ciphertext = aliceCred.Ciphertext
	if err := e.db.UpdateCredentials(t.Context(), []*duet.Credential{bobCred}); err != nil {
		t.Fatal(err)
	}
	_, err = e.c.Sync(t.Context(), "bob", "x")
	if duet.ErrorCode(err) != duet.CodeInternal || !strings.Contains(duet.ErrorMessage(err), "cannot be decrypted") {
		t.Fatalf("swapped ciphertext: got %v", err)
	}
}

func TestRegisterValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name string
		r    mcpclient.Registration
		code duet.Code
	}{
		{"no name", mcpclient.Registration{Owner: "a", URL: "https://x.example/mcp"}, duet.CodeInvalidArgument},
		{"serverKey-like name", mcpclient.Registration{Owner: "a", Name: "mcp_x", URL: "https://x.example/mcp"}, duet.CodeInvalidArgument},
		{"bad scheme", mcpclient.Registration{Owner: "a", Name: "x", URL: "ftp://x.example/"}, duet.CodeInvalidArgument},
		{"user info", mcpclient.Registration{Owner: "a", Name: "x", URL: "https://u:p@x.example/"}, duet.CodeURLRefused},
		{"reserved header", mcpclient.Registration{Owner: "a", Name: "x", URL: "https://x.example/", Headers: map[string]string{"Mcp-Session-Id": "1"}}, duet.CodeInvalidArgument},
		{"bad header name", mcpclient.Registration{Owner: "a", Name: "x", URL: "https://x.example/", Headers: map[string]string{"Bad Header": "1"}}, duet.CodeInvalidArgument},
		{"header with newline", mcpclient.Registration{Owner: "a", Name: "x", URL: "https://x.example/", Headers: map[string]string{"X-Key": "a\r\nb"}}, duet.CodeInvalidArgument},
		{"empty header", mcpclient.Registration{Owner: "a", Name: "x", URL: "https://x.example/", Headers: map[string]string{"X-Key": " "}}, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		if _, err := e.c.Register(t.Context(), tt.r); duet.ErrorCode(err) != tt.code {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.code)
		} else if err != nil && strings.Contains(err.Error(), "a\r\nb") {
			t.Errorf("%s: the error quotes a header value", tt.name)
		}
	}
	if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "a", Name: "x", URL: "https://x.example/mcp"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "a", Name: "x", URL: "https://y.example/mcp"}); duet.ErrorCode(err) != duet.CodeConflict {
		t.Fatalf("same name: got %v, want CONFLICT", err)
	}
	// A second registration of an address names the first and the ways out.
	_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "a", Name: "y", URL: "HTTPS://X.example:443/mcp/"})
	if want := `you registered this address already, as "x" (serverKey `; duet.ErrorCode(err) != duet.CodeConflict || !strings.Contains(duet.ErrorMessage(err), want) ||
		!strings.Contains(duet.ErrorMessage(err), `remove "x" first`) {
		t.Fatalf("same address: got %v, want CONFLICT with %q", err, want)
	}
	_, err = e.c.Register(t.Context(), mcpclient.Registration{Owner: "a", Name: "x", URL: "https://x.example/mcp/"})
	if want := `you registered this address already, as "x"`; duet.ErrorCode(err) != duet.CodeConflict || !strings.Contains(duet.ErrorMessage(err), want) {
		t.Fatalf("same address and name: got %v, want CONFLICT with %q", err, want)
	}
	s, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "a", Name: "x", URL: "https://y.example/mcp", Replace: true})
	if err != nil || !strings.Contains(s.URL, "y.example") {
		t.Fatalf("replace: got %+v, %v", s, err)
	}
	if err := e.c.Remove(t.Context(), "a", "x"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Remove(t.Context(), "a", "x"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Fatalf("remove twice: got %v", err)
	}
}

func TestIdleSessionsClose(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *mcpclient.Options) { o.IdleTimeout = 50 * time.Millisecond })
	n := &mcptest.Counters{}
	srv := mcptest.NewServer("idle", n)
	url := mcptest.Start(t, mcptest.Streamable(srv, false, true))
	reg := e.register(t, "alice", "idle", url, nil)
	call := func() {
		t.Helper()
		if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
			t.Fatal(err)
		}
	}
	call()
	call()
	if got := n.Initialize.Load(); got != 2 {
		t.Fatalf("initialize: got %d, want 2 (sync, then one session for both calls)", got)
	}
	// The reaper runs every second; the idle session goes (the client
	// ends it at the server) and the next call opens a new one. Waited
	// for as the server sees it, not for a fixed time.
	deadline := time.Now().Add(30 * time.Second)
	for sessions := 1; sessions > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the idle session still open at the server after 30s")
		}
		time.Sleep(20 * time.Millisecond)
		sessions = 0
		for range srv.Sessions() {
			sessions++
		}
	}
	call()
	if got := n.Initialize.Load(); got != 3 {
		t.Fatalf("initialize after idling: got %d, want 3", got)
	}
	// Replacing the registration (new credentials) drops the session too.
	if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "idle", URL: url, Replace: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Sync(t.Context(), "alice", "idle"); err != nil {
		t.Fatal(err)
	}
	call()
	if got := n.Initialize.Load(); got != 5 {
		t.Fatalf("initialize after replacing: got %d, want 5 (sync + new session)", got)
	}
}

// TestRetries checks that a call is repeated only when that cannot run the
// tool twice.
func TestRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	n := &mcptest.Counters{}
	srv := mcptest.NewServer("retry", n)
	flaky := &mcptest.Flaky{H: mcptest.Streamable(srv, false, false)}
	url := mcptest.Start(t, flaky)
	reg := e.register(t, "alice", "retry", url, nil)
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	// The server forgets the session: the tool did not run, so the call is
	// made again on a new session, whatever the tool.
	for ss := range srv.Sessions() {
		ss.Close()
	}
	calls := n.Calls.Load()
	if res, err := e.invoke(t, "alice", reg.ServerKey, "fail", nil); duet.ErrorCode(err) != duet.CodeMCPToolError || res == nil {
		t.Fatalf("after the session was lost: got %v, %v; want the tool's own error", res, err)
	}
	if got := n.Calls.Load() - calls; got != 1 {
		t.Errorf("tool runs: got %d, want 1", got)
	}
	// A transient 503: a read-only tool is called again...
	flaky.Fail(1)
	if res, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 2, "b": 2}); err != nil || res.Text() != "2+2=4" {
		t.Fatalf("read-only tool after a 503: got %v, %v", res, err)
	}
	// ...a tool that may not be repeated is not.
	flaky.Fail(1)
	calls = n.Calls.Load()
	if _, err := e.invoke(t, "alice", reg.ServerKey, "fail", nil); duet.ErrorCode(err) != duet.CodeMCPUnreachable || !strings.Contains(err.Error(), "503") {
		t.Fatalf("non-idempotent tool after a 503: got %v, want MCP_UNREACHABLE naming 503", err)
	}
	if got := n.Calls.Load() - calls; got != 0 {
		t.Errorf("tool runs: got %d, want 0", got)
	}
}
