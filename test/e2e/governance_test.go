package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const gatewayKey = "gw-key-CANARY-7f1e2d3c4b5a"

// rpc posts one JSON-RPC message to /mcp/http with headers and returns the
// status, the headers and the decoded JSON body (SSE bodies are unwrapped).
func rpc(t *testing.T, url string, headers map[string]string, method string, params any) (int, http.Header, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	return post(t, url+"/mcp/http", headers, body, true)
}

// seen keeps every response (headers and body) of these tests, for the
// canary checks.
var seen struct {
	sync.Mutex
	all strings.Builder
}

func post(t *testing.T, url string, headers map[string]string, body []byte, mcpHeaders bool) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if mcpHeaders {
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	seen.Lock()
	fmt.Fprintf(&seen.all, "%v\n%s\n", resp.Header, b)
	seen.Unlock()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				b = []byte(d)
			}
		}
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	if out == nil {
		out = map[string]any{"_raw": string(b)}
	}
	return resp.StatusCode, resp.Header, out
}

func gw(user string) map[string]string {
	h := map[string]string{"X-Api-Key": gatewayKey}
	if user != "" {
		h["SSO-Emp-Id"] = user
	}
	return h
}

// structured returns result.structuredContent of a tools/call response.
func structured(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	r, ok := resp["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", resp)
	}
	sc, _ := r["structuredContent"].(map[string]any)
	return sc
}

func liteCall(t *testing.T, url string, headers map[string]string, name string, args any, user string) (int, map[string]any) {
	t.Helper()
	body := map[string]any{"name": name, "arguments": args}
	if user != "" {
		body["user"] = map[string]any{"empId": user}
	}
	b, _ := json.Marshal(body)
	code, _, out := post(t, url+"/mcp/tools/call", headers, b, false)
	return code, out
}

// TestGatewayMatrix is seed 000's launch verification matrix, for both
// dialects, against the real binary.
func TestGatewayMatrix(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	duet(t, home, "apply", "-f", suiteFile(t, srv.URL), "--as", "alice")
	s := serve(t, home, []string{"DUET_GATEWAY_API_KEYS=old-key-0000000000," + gatewayKey})

	// initialize / server/discover with the right key → 200 with serverInfo.
	code, _, resp := rpc(t, s.URL, gw("alice"), "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "gw", "version": "1"}})
	if code != 200 || resp["result"].(map[string]any)["serverInfo"].(map[string]any)["name"] != "duet" {
		t.Fatalf("initialize: %d %v", code, resp)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "gw", Version: "1"}, nil)
	cs, err := client.Connect(ctxTimeout(t, 30*time.Second), &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp/http", HTTPClient: &http.Client{Transport: bearer{headers: gw("alice")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("default go-sdk client negotiated %s, want 2026-07-28 (server/discover)", v)
	}
	cs.Close()

	// tools/call as A (owner) → A's tasks; as B (no resources) → total 0.
	for user, want := range map[string]float64{"alice": 1, "carol": 0} {
		code, _, resp := rpc(t, s.URL, gw(user), "tools/call", map[string]any{"name": "list_test_tasks", "arguments": map[string]any{}})
		if code != 200 || structured(t, resp)["total"] != want {
			t.Errorf("MCP list_test_tasks as %s: %d %v, want total %v", user, code, resp, want)
		}
		lcode, lresp := liteCall(t, s.URL, map[string]string{"X-Api-Key": gatewayKey}, "list_test_tasks", map[string]any{}, user)
		if lcode != 200 || lresp["structuredContent"].(map[string]any)["total"] != want {
			t.Errorf("MCP-Lite list_test_tasks as %s: %d %v, want total %v", user, lcode, lresp, want)
		}
	}
	// Key rotation: the older key still works.
	if code, _, resp := rpc(t, s.URL, map[string]string{"X-Api-Key": "old-key-0000000000", "SSO-Emp-Id": "alice"}, "tools/call", map[string]any{"name": "list_test_tasks", "arguments": map[string]any{}}); code != 200 || structured(t, resp)["total"] != 1.0 {
		t.Errorf("older key: %d %v", code, resp)
	}
	// Wrong key → 401 with a JSON-RPC error and WWW-Authenticate.
	code, hdr, resp := rpc(t, s.URL, map[string]string{"X-Api-Key": "wrong", "SSO-Emp-Id": "alice"}, "tools/call", map[string]any{"name": "list_test_tasks", "arguments": map[string]any{}})
	if code != 401 || resp["error"] == nil || resp["jsonrpc"] != "2.0" || hdr.Get("WWW-Authenticate") == "" {
		t.Errorf("wrong key: %d %v %v", code, hdr, resp)
	}
	if lcode, lresp := liteCall(t, s.URL, map[string]string{"X-Api-Key": "wrong"}, "list_test_tasks", map[string]any{}, "alice"); lcode != 401 || lresp["error"] == nil {
		t.Errorf("MCP-Lite wrong key: %d %v", lcode, lresp)
	}
	// Neither key nor token → 401; valid key without a user → 401.
	for name, h := range map[string]map[string]string{"no credentials": {}, "key without user": gw("")} {
		if code, hdr, resp := rpc(t, s.URL, h, "tools/list", map[string]any{}); code != 401 || resp["error"] == nil || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %v", name, code, resp)
		}
	}
	// Identity in the body is ignored without a gateway key: a personal
	// token for carol cannot read alice's tasks by naming her.
	tok, _, _ := duet(t, home, "token", "create", "--user", "carol")
	lcode, lresp := liteCall(t, s.URL, map[string]string{"Authorization": "Bearer " + strings.TrimSpace(tok)}, "list_test_tasks", map[string]any{}, "alice")
	if lcode != 200 || lresp["structuredContent"].(map[string]any)["total"] != 0.0 {
		t.Errorf("MCP-Lite user field without gateway key: %d %v, want carol's (0 tasks)", lcode, lresp)
	}
	// Credentials in the URL are refused.
	req, _ := http.NewRequest("POST", s.URL+"/mcp/http?api_key="+gatewayKey, strings.NewReader(`{}`))
	r, _ := http.DefaultClient.Do(req)
	if r.StatusCode != 400 {
		t.Errorf("credentials in the query: got %d, want 400", r.StatusCode)
	}
	// A Host that is not allowed → 403 (DNS-rebinding protection).
	req, _ = http.NewRequest("POST", s.URL+"/mcp/http", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Host = "evil.example.com"
	for k, v := range gw("alice") {
		req.Header.Set(k, v)
	}
	r, _ = http.DefaultClient.Do(req)
	if r.StatusCode != 403 {
		t.Errorf("foreign Host: got %d, want 403", r.StatusCode)
	}

	// The canary: the gateway key and a personal token appear in no log
	// line, audit row or response.
	s.Stop(t)
	audit := everyonesAudit(t, home)
	dbFile, _ := os.ReadFile(filepath.Join(home, "duet.db"))
	wal, _ := os.ReadFile(filepath.Join(home, "duet.db-wal"))
	seen.Lock()
	responses := seen.all.String()
	seen.Unlock()
	for _, secret := range []string{gatewayKey, strings.TrimSpace(tok)} {
		for where, text := range map[string]string{"server log": s.Stderr(), "audit": audit, "database": string(dbFile) + string(wal), "responses": responses} {
			if strings.Contains(text, secret) {
				t.Errorf("secret %q... found in the %s", secret[:8], where)
			}
		}
	}
	if !strings.Contains(audit, `"callSource": "mcp-lite"`) || !strings.Contains(audit, `"outcome": "UNAUTHENTICATED"`) || !strings.Contains(audit, `"outcome": "PERMISSION_DENIED"`) {
		t.Errorf("audit lacks MCP-Lite calls or refusals:\n%.2000s", audit)
	}
}

func TestLimitsOverHTTP(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	duet(t, home, "apply", "-f", suiteFile(t, srv.URL), "--as", "alice")
	// The conformance fixtures add catalog tools that take a while
	// (test_tool_with_progress pauses twice for 50 ms): calls to them surely
	// overlap, so the caps are tested deterministically.
	s := serve(t, home, []string{"DUET_GATEWAY_API_KEYS=" + gatewayKey, "DUET_MAX_BODY_BYTES=65536", "DUET_MAX_ARG_BYTES=1024",
		"DUET_MAX_RESULT_BYTES=1024", "DUET_MAX_PER_CALLER=1", "DUET_MAX_CONCURRENT=2"}, "--conformance-fixtures")
	h := gw("alice")
	// Body too large (10 MB) → 413 with a JSON-RPC error; the server keeps serving.
	big := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"` + strings.Repeat("x", 10<<20) + `"}}}`)
	if code, _, resp := post(t, s.URL+"/mcp/http", h, big, true); code != 413 || resp["error"] == nil {
		t.Errorf("10 MB body: %d %v", code, resp)
	}
	// Arguments over the limit → TOO_LARGE result.
	_, _, resp := rpc(t, s.URL, h, "tools/call", map[string]any{"name": "get_test_task", "arguments": map[string]any{"taskId": strings.Repeat("x", 2000)}})
	if e, _ := structured(t, resp)["error"].(map[string]any); e["code"] != "TOO_LARGE" {
		t.Errorf("large arguments: %v", resp)
	}
	// A result over the limit → TOO_LARGE result.
	long := filepath.Join(t.TempDir(), "long.yaml")
	os.WriteFile(long, []byte("task: {name: long, description: "+strings.Repeat("d", 2000)+"}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"), 0o600)
	duet(t, home, "apply", "-f", long, "--as", "alice")
	_, _, resp = rpc(t, s.URL, h, "tools/call", map[string]any{"name": "list_test_tasks", "arguments": map[string]any{}})
	if e, _ := structured(t, resp)["error"].(map[string]any); e["code"] != "TOO_LARGE" {
		t.Errorf("large result: %v", resp)
	}
	// Concurrent calls over the per-caller cap → some HTTP 429 with Retry-After.
	var mu sync.Mutex
	statuses := map[int]int{}
	retryAfter := ""
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			code, hdr, _ := rpc(t, s.URL, h, "tools/call", map[string]any{"name": "test_tool_with_progress", "arguments": map[string]any{}})
			mu.Lock()
			statuses[code]++
			if code == 429 {
				retryAfter = hdr.Get("Retry-After")
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[429] == 0 || statuses[200] == 0 || retryAfter == "" {
		t.Errorf("20 concurrent slow calls with a per-caller cap of 1: statuses %v, Retry-After %q", statuses, retryAfter)
	}
	// Still serving.
	if code, _, _ := rpc(t, s.URL, h, "tools/list", map[string]any{}); code != 200 {
		t.Errorf("after the limits: %d", code)
	}
	s.Stop(t)
	audit := everyonesAudit(t, home)
	for _, want := range []string{`"outcome": "TOO_LARGE"`, `"outcome": "RATE_LIMITED"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("no audit row with %s", want)
		}
	}
}

func TestTimeoutAndIdempotencyOverHTTP(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	srv := api(t)
	duet(t, home, "apply", "-f", suiteFile(t, srv.URL), "--as", "alice")
	out, _, _ := duet(t, home, "task", "list", "--as", "alice", "--json")
	var tasks []struct{ ID string }
	json.Unmarshal([]byte(out), &tasks)
	s := serve(t, home, []string{"DUET_GATEWAY_API_KEYS=" + gatewayKey, "DUET_MAX_PER_CALLER=200", "DUET_MAX_CONCURRENT=200"})
	h := gw("alice")
	// 100 concurrent identical start_test_run calls create exactly one run.
	var wg sync.WaitGroup
	var mu sync.Mutex
	runIDs := map[string]int{}
	replayed := 0
	for range 100 {
		wg.Go(func() {
			_, _, resp := rpc(t, s.URL, h, "tools/call", map[string]any{"name": "start_test_run", "arguments": map[string]any{"taskId": tasks[0].ID, "idempotencyKey": "same-key"}})
			sc := structured(t, resp)
			mu.Lock()
			runIDs[fmt.Sprint(sc["runId"])]++
			if sc["replayed"] == true {
				replayed++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(runIDs) != 1 || replayed != 99 {
		t.Fatalf("100 identical calls: run ids %v, replayed %d; want one run and 99 replays", runIDs, replayed)
	}
	_, _, resp := rpc(t, s.URL, h, "tools/call", map[string]any{"name": "start_test_run", "arguments": map[string]any{"taskId": tasks[0].ID, "idempotencyKey": "same-key", "device": "pixel-7"}})
	if e, _ := structured(t, resp)["error"].(map[string]any); e["code"] != "IDEMPOTENCY_CONFLICT" {
		t.Fatalf("same key, other arguments: %v", resp)
	}
	s.Stop(t)
	// A per-call timeout: with a 1ns limit every call times out, is
	// audited, and the server keeps answering.
	s = serve(t, home, []string{"DUET_GATEWAY_API_KEYS=" + gatewayKey, "DUET_CALL_TIMEOUT=1ns"})
	_, _, resp = rpc(t, s.URL, h, "tools/call", map[string]any{"name": "list_test_tasks", "arguments": map[string]any{}})
	if e, _ := structured(t, resp)["error"].(map[string]any); e["code"] != "TIMEOUT" {
		t.Fatalf("timeout: %v", resp)
	}
	s.Stop(t)
	audit := everyonesAudit(t, home)
	for _, want := range []string{`"outcome": "TIMEOUT"`, `"outcome": "IDEMPOTENCY_CONFLICT"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("no audit row with %s", want)
		}
	}
}

// everyonesAudit is the whole audit log: read by an administrator (a user
// sees only their own records, on every entry point).
func everyonesAudit(t *testing.T, home string) string {
	t.Helper()
	cmd := exec.Command(duetBin, "audit", "--json", "--limit", "1000", "--as", "tester")
	cmd.Dir = "/"
	cmd.Env = minimalEnv("DUET_HOME="+home, "DUET_ADMINS=tester")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duet audit as an administrator: %v", err)
	}
	return string(out)
}
