package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/mcpclient"
)

const loopKey = "loop-gateway-key-5e2c"

// servedDuet is a Duet served on a loopback listener, with the number of
// MCP requests (/mcp/http) it received.
type servedDuet struct {
	*app.App
	base string
	mcp  atomic.Int64
}

func serveDuet(t *testing.T, env map[string]string) *servedDuet {
	t.Helper()
	env["DUET_LOG_LEVEL"] = "error"
	env["DUET_GATEWAY_API_KEYS"] = loopKey
	d := &servedDuet{App: openAppEnv(t, env)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	count := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/mcp/http" {
				d.mcp.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
	ready := make(chan string, 1)
	go func() { served <- d.Serve(sctx, ln, app.ServeOptions{Wrap: count, Ready: ready}) }()
	t.Cleanup(func() { stop(); <-served })
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	d.base = "http://" + ln.Addr().String()
	return d
}

// gatewayHeaders are the credentials alice registers a Duet with.
var gatewayHeaders = map[string]string{"X-Api-Key": loopKey, "SSO-Emp-Id": "alice"}

// TestDuetIsNotItsOwnMCPServer: Duet refuses to be registered as an MCP
// server of itself — by its listener's address in any spelling, by its
// public name (DUET_PUBLIC_URL), through the REST API as through the one
// Register — and a registration that reaches it anyway (a name that now
// resolves to it) is refused at call time: not one MCP request arrives.
func TestDuetIsNotItsOwnMCPServer(t *testing.T) {
	t.Parallel()
	d := serveDuet(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_MCP_ALLOW_PRIVATE": "true", "DUET_PUBLIC_URL": "https://duet.example.test"})
	ctx := t.Context()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(d.base, "http://"))
	for i, u := range []string{
		d.base + "/mcp/http",
		"http://localhost:" + port + "/mcp/http",
		"http://[::ffff:127.0.0.1]:" + port + "/mcp/http",
		"http://127.1:" + port + "/mcp/http",
		"https://duet.example.test/mcp/http",
		"https://DUET.Example.test.:443/mcp/http",
	} {
		_, err := d.MCPClient.Register(ctx, mcpclient.Registration{Owner: "alice", Name: fmt.Sprintf("self%d", i), URL: u, Headers: gatewayHeaders})
		if duet.ErrorCode(err) != duet.CodeURLRefused || !strings.Contains(duet.ErrorMessage(err), "Duet's own") {
			t.Errorf("registering %s: got %v, want URL_REFUSED naming Duet's own address", u, err)
		}
	}
	// The REST API (and so the console, the CLI and team registration,
	// which call the same Register) refuses it too.
	body := fmt.Sprintf(`{"name":"self","url":%q,"headers":{"X-Api-Key":%q,"SSO-Emp-Id":"alice"}}`, d.base+"/mcp/http", loopKey)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.base+"/api/v1/servers", strings.NewReader(body))
	req.Header.Set("X-Api-Key", loopKey)
	req.Header.Set("SSO-Emp-Id", "alice")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "URL_REFUSED") {
		t.Errorf("POST /api/v1/servers with Duet's own address: %s %s", resp.Status, out)
	}

	// A registration that points at Duet although it did not at
	// registration (its name resolves elsewhere now): stored as it was,
	// it is refused when it is used.
	reg := &duet.MCPServer{Owner: "alice", Name: "moved", URL: d.base + "/mcp/http", ServerKey: "mcp_moved_0001"}
	if err := d.Store.CreateMCPServer(ctx, reg, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.MCPClient.Sync(ctx, "alice", "moved"); duet.ErrorCode(err) != duet.CodeURLRefused {
		t.Errorf("sync of a registration that reaches Duet: got %v, want URL_REFUSED", err)
	}
	_, err = d.MCPClient.Invoke(ctx, duet.InvokeRequest{Executor: "alice", Source: duet.SourceCLI, ServerKey: reg.ServerKey, Tool: "start_test_run"})
	if code := duet.ErrorCode(err); code != duet.CodeURLRefused && code != duet.CodeMCPServerNotConfigured && code != duet.CodeMCPToolNotFound {
		t.Errorf("a call through a registration that reaches Duet: got %v", err)
	}
	if n := d.mcp.Load(); n != 0 {
		t.Errorf("Duet received %d MCP requests from itself, want none", n)
	}
}

// proxy forwards TCP connections to target: an address that reaches Duet
// which Duet cannot know (a reverse proxy, another name for it).
func proxy(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				var wg sync.WaitGroup
				wg.Go(func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite() })
				io.Copy(c, up)
				wg.Wait()
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// applyLoop applies, as alice, a task named name whose one case calls
// start_test_run of server with the given taskId ("${task.id}": itself)
// and idempotencyKey "${run.id}" — a new run every time.
func applyLoop(t *testing.T, d *servedDuet, name, server, taskID string) *duet.Task {
	t.Helper()
	src := fmt.Sprintf(`
task: {name: %s, baseURL: 'http://127.0.0.1:9'}
cases:
  - key: again
    title: starts a run again
    steps:
      - mcpCall:
          server: %s
          tool: start_test_run
          input: {taskId: %q, idempotencyKey: "${run.id}"}
          saveAs: started
`, name, server, taskID)
	ctx := t.Context()
	suite, err := compiler.CompileSuite(ctx, []byte(src), name+".yaml", d.CompilerOptions(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	return res.Task
}

// register registers target's MCP endpoint at d as alice's server name.
func register(t *testing.T, d *servedDuet, name, target string) {
	t.Helper()
	if _, err := d.MCPClient.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: name, URL: target + "/mcp/http", Headers: gatewayHeaders}); err != nil {
		t.Fatalf("registering %s: %v", target, err)
	}
	if _, err := d.MCPClient.Sync(t.Context(), "alice", name); err != nil {
		t.Fatalf("syncing %s: %v", target, err)
	}
}

// settled waits until the runs of the tasks stop changing: every one has
// ended and no new one appeared for a while. It returns them, newest first.
func settled(t *testing.T, tasks map[*servedDuet][]string) map[*servedDuet][]*duet.Run {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last string
	stable := 0
	for {
		out := map[*servedDuet][]*duet.Run{}
		all, done := 0, true
		var sig strings.Builder
		for d, ids := range tasks {
			for _, id := range ids {
				runs, _, err := d.Store.FindRuns(t.Context(), duet.RunFilter{Viewer: "alice", TaskID: id, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				out[d] = append(out[d], runs...)
				for _, r := range runs {
					all++
					done = done && r.Status.Final()
					sig.WriteString(r.ID + string(r.Status))
				}
			}
		}
		if done && sig.String() == last {
			if stable++; stable >= 3 {
				return out
			}
		} else {
			stable = 0
		}
		last = sig.String()
		if time.Now().After(deadline) {
			t.Fatalf("runs still changing after 3 minutes (%d runs)", all)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// depthRefused reports whether run's only step failed with
// CALL_DEPTH_EXCEEDED.
func depthRefused(t *testing.T, d *servedDuet, run *duet.Run) bool {
	t.Helper()
	execs, err := d.Store.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return len(execs) == 1 && len(execs[0].Results) == 1 && execs[0].Results[0].ErrorCode == duet.CodeCallDepthExceeded
}

// TestRunLoopThroughAProxyStops is the review's reproduction: a case calls
// start_test_run on its own task with idempotencyKey "${run.id}", through
// an address of Duet that Duet cannot recognise (a TCP proxy). It made
// 1,344 runs in 10 s; now the call-depth mark stops it after the runs of
// depth 0 to 4, the fifth failing with CALL_DEPTH_EXCEEDED.
func TestRunLoopThroughAProxyStops(t *testing.T) {
	t.Parallel()
	d := serveDuet(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_WORKERS": "4"})
	register(t, d, "alias", proxy(t, strings.TrimPrefix(d.base, "http://")))
	task := applyLoop(t, d, "loop", "alias", "${task.id}")
	if _, err := d.Catalog.StartRun(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceCLI}, catalog.StartRunIn{TaskID: task.ID, IdempotencyKey: "first"}); err != nil {
		t.Fatal(err)
	}
	d.Worker.Notify()
	runs := settled(t, map[*servedDuet][]string{d: {task.ID}})[d]
	if len(runs) != 5 {
		t.Fatalf("the loop made %d runs, want 5 (depths 0 to 4)", len(runs))
	}
	for i, r := range runs { // newest first
		if r.CallDepth != 4-i {
			t.Errorf("run %d of the chain has call depth %d, want %d", 4-i, r.CallDepth, 4-i)
		}
	}
	if !depthRefused(t, d, runs[0]) || runs[0].Status != duet.StatusFailed {
		t.Errorf("the deepest run: %s, want failed with its call refused (CALL_DEPTH_EXCEEDED)", runs[0].Status)
	}
}

// TestRunLoopThroughTwoDuetsStops: Duet A's case starts a run on Duet B,
// whose case starts a run on A, and so on. Each is a legitimate MCP
// server of the other; the chain stops at the depth bound: A runs at
// depths 0, 2 and 4, B at 1 and 3, and A's deepest run's call is refused.
func TestRunLoopThroughTwoDuetsStops(t *testing.T) {
	t.Parallel()
	a := serveDuet(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true"})
	b := serveDuet(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true"})
	register(t, a, "b", b.base)
	register(t, b, "a", a.base)
	ping := applyLoop(t, a, "ping", "b", "placeholder")
	pong := applyLoop(t, b, "pong", "a", ping.ID)
	applyLoop(t, a, "ping", "b", pong.ID) // a new version that names B's task
	if _, err := a.Catalog.StartRun(t.Context(), duet.Caller{UserID: "alice", Source: duet.SourceCLI}, catalog.StartRunIn{TaskID: ping.ID, IdempotencyKey: "first"}); err != nil {
		t.Fatal(err)
	}
	a.Worker.Notify()
	runs := settled(t, map[*servedDuet][]string{a: {ping.ID}, b: {pong.ID}})
	depths := func(rs []*duet.Run) (out []int) {
		for _, r := range rs {
			out = append(out, r.CallDepth)
		}
		return out
	}
	if got := fmt.Sprint(depths(runs[a]), depths(runs[b])); got != "[4 2 0] [3 1]" {
		t.Fatalf("call depths of the runs on A and B: %s, want [4 2 0] [3 1]", got)
	}
	if !depthRefused(t, a, runs[a][0]) {
		t.Errorf("A's deepest run did not fail with CALL_DEPTH_EXCEEDED")
	}
}

// TestCallDepthHeader: a request deeper than the bound is refused before
// anything runs, a malformed or repeated header is refused, and a run
// started at the bound keeps its depth: its http step is refused without
// a request, so its target never hears of it.
func TestCallDepthHeader(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	target := serveCounting(t, &hits)
	d := serveDuet(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true"})
	src := "task: {name: deep, baseURL: '" + target + "'}\ncases:\n  - key: get\n    title: get\n    steps:\n      - http: GET /\n"
	suite, err := compiler.CompileSuite(t.Context(), []byte(src), "deep.yaml", d.CompilerOptions(t.Context(), "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Store.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	start := func(depth []string, key string) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_test_run","arguments":{"taskId":%q,"idempotencyKey":%q}}}`, res.Task.ID, key)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, d.base+"/mcp/http", strings.NewReader(body))
		req.Header.Set("X-Api-Key", loopKey)
		req.Header.Set("SSO-Emp-Id", "alice")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header["Duet-Call-Depth"] = depth
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, bad := range []struct {
		depth  []string
		status int
		code   string
	}{
		{[]string{"5"}, http.StatusLoopDetected, "CALL_DEPTH_EXCEEDED"},
		{[]string{"99999999999999999999"}, http.StatusLoopDetected, "CALL_DEPTH_EXCEEDED"},
		{[]string{"two"}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{[]string{"-1"}, http.StatusBadRequest, "INVALID_ARGUMENT"},
		{[]string{"1", "1"}, http.StatusBadRequest, "INVALID_ARGUMENT"},
	} {
		if status, body := start(bad.depth, "k"+bad.depth[0]); status != bad.status || !strings.Contains(body, bad.code) {
			t.Errorf("Duet-Call-Depth %q: %d %s, want %d %s", bad.depth, status, body, bad.status, bad.code)
		}
	}
	status, body := start([]string{"4"}, "at-the-bound")
	if status != http.StatusOK {
		t.Fatalf("Duet-Call-Depth 4: %d %s", status, body)
	}
	var out struct {
		Result struct {
			StructuredContent catalog.StartRunOut `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || out.Result.StructuredContent.RunID == "" {
		t.Fatalf("start_test_run: %s (%v)", body, err)
	}
	runs := settled(t, map[*servedDuet][]string{d: {res.Task.ID}})[d]
	if len(runs) != 1 || runs[0].CallDepth != 4 || !depthRefused(t, d, runs[0]) {
		t.Fatalf("the run started at depth 4: %+v, want its http step refused with CALL_DEPTH_EXCEEDED", runs)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the step's target got %d requests, want none", n)
	}
}

// serveCounting serves a site on loopback that counts its requests.
func serveCounting(t *testing.T, hits *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestRunsPerMinuteEveryEntryPoint: DUET_MAX_RUNS_PER_MINUTE counts the
// runs a user starts however they start them — REST, MCP-Lite, the
// catalog the CLI and the console call, MCP — and refuses the next with
// RATE_LIMITED on each of them; another user is not affected.
func TestRunsPerMinuteEveryEntryPoint(t *testing.T) {
	t.Parallel()
	d := serveDuet(t, map[string]string{"DUET_MAX_RUNS_PER_MINUTE": "3", "DUET_WORKERS": "0"})
	suite, err := compiler.CompileSuite(t.Context(), []byte("task: {name: budget, baseURL: 'http://127.0.0.1:9'}\ncases:\n  - key: a\n    title: a\n    steps:\n      - assert: 'true'\n"), "b.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Store.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Store.ShareTask(t.Context(), "alice", res.Task.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	post := func(user, path, idem, body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, d.base+path, strings.NewReader(body))
		req.Header.Set("X-Api-Key", loopKey)
		req.Header.Set("SSO-Emp-Id", user)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	rest := func(user, key string) (int, string) {
		return post(user, "/api/v1/runs", key, fmt.Sprintf(`{"taskId":%q}`, res.Task.ID))
	}
	lite := func(user, key string) (int, string) {
		return post(user, "/mcp/tools/call", "", fmt.Sprintf(`{"name":"start_test_run","arguments":{"taskId":%q,"idempotencyKey":%q}}`, res.Task.ID, key))
	}
	mcp := func(user, key string) (int, string) {
		return post(user, "/mcp/http", "", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_test_run","arguments":{"taskId":%q,"idempotencyKey":%q}}}`, res.Task.ID, key))
	}
	cli := func(user, key string) error {
		r, err := d.Catalog.Call(t.Context(), catalog.Request{Caller: duet.Caller{UserID: user, Source: duet.SourceCLI}, Tool: catalog.ToolStartRun,
			Args: json.RawMessage(fmt.Sprintf(`{"taskId":%q,"idempotencyKey":%q}`, res.Task.ID, key))})
		if err == nil && r.IsError {
			err = duet.Errorf(r.Code, "%s", r.Text)
		}
		return err
	}
	if status, body := rest("alice", "r1"); status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("REST start: %d %s", status, body)
	}
	if status, body := lite("alice", "l1"); status != http.StatusOK || strings.Contains(body, `"isError":true`) {
		t.Fatalf("MCP-Lite start: %d %s", status, body)
	}
	if err := cli("alice", "c1"); err != nil {
		t.Fatalf("CLI start: %v", err)
	}
	// The budget is spent, on every entry point.
	if status, body := rest("alice", "r2"); status != http.StatusTooManyRequests || !strings.Contains(body, "RATE_LIMITED") {
		t.Errorf("REST beyond the budget: %d %s", status, body)
	}
	if _, body := lite("alice", "l2"); !strings.Contains(body, "RATE_LIMITED") {
		t.Errorf("MCP-Lite beyond the budget: %s", body)
	}
	if _, body := mcp("alice", "m2"); !strings.Contains(body, "RATE_LIMITED") || !strings.Contains(body, `"isError":true`) {
		t.Errorf("MCP beyond the budget: %s", body)
	}
	if err := cli("alice", "c2"); duet.ErrorCode(err) != duet.CodeRateLimited {
		t.Errorf("CLI beyond the budget: %v", err)
	}
	// A retry of a start that was made is its first result, not a refusal.
	if status, body := rest("alice", "r1"); status != http.StatusOK && status != http.StatusCreated {
		t.Errorf("a replayed REST start: %d %s", status, body)
	}
	if _, body := mcp("bob", "m1"); strings.Contains(body, `"isError":true`) {
		t.Errorf("bob's start while alice is at her budget: %s", body)
	}
}
