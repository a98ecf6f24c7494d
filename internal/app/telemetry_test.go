package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/telemetry"
)

func openAppTelemetry(t *testing.T, env map[string]string, tel *telemetry.Telemetry) *app.App {
	t.Helper()
	env["DUET_HOME"] = t.TempDir()
	env["DUET_LOG_LEVEL"] = "error"
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: os.Stderr, Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func patFor(t *testing.T, a *app.App, user string) string {
	t.Helper()
	plain, hash := auth.NewToken()
	if err := a.Store.CreateToken(t.Context(), &duet.Token{UserID: user, Name: "t", Hash: hash}); err != nil {
		t.Fatal(err)
	}
	return plain
}

// TestMetricsScrape: with DUET_METRICS=on and a token, /metrics on the
// main port needs the bearer, and a scrape parses as the Prometheus text
// format with the calls just made, labelled by closed sets only.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_METRICS": "on", "DUET_METRICS_TOKEN": "scrape-secret", "DUET_LOG_LEVEL": "error"})
	srv := httptest.NewServer(a.Handler(app.ServeOptions{}))
	t.Cleanup(srv.Close)
	tok := patFor(t, a, "alice")
	call(t, srv.URL, tok, "tools/call", `{"name":"list_test_tasks","arguments":{}}`)
	lreq, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp/tools/call", strings.NewReader(`{"name":"no_such_tool_`+strings.Repeat("x", 40)+`","arguments":{}}`))
	lreq.Header.Set("Authorization", "Bearer "+tok)
	lreq.Header.Set("Content-Type", "application/json")
	if lresp, err := http.DefaultClient.Do(lreq); err == nil {
		lresp.Body.Close()
	}
	call(t, srv.URL, "", "tools/list", `{}`) // refused at the door: 401
	a.Audit.Close()

	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("scrape without the token: got %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer scrape-secret")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the scrape does not parse: %v", err)
	}
	got := map[string]float64{}
	for _, m := range fams["duet_calls_total"].GetMetric() {
		var l []string
		for _, p := range m.GetLabel() {
			l = append(l, p.GetName()+"="+p.GetValue())
		}
		got[strings.Join(l, ",")] = m.GetCounter().GetValue()
	}
	for _, want := range []string{
		"code=OK,method=tools/call,source=mcp,tool=list_test_tasks",
		"code=NOT_FOUND,method=tools/call,source=mcp-lite,tool=unknown", // a made-up tool name is not a label
		"code=UNAUTHENTICATED,method=http,source=mcp,tool=",
	} {
		if got[want] != 1 {
			t.Errorf("duet_calls_total{%s}: got %v, want 1 (all: %v)", want, got[want], got)
		}
	}
	for _, name := range []string{"duet_call_duration_seconds", "duet_run_queue_depth", "duet_browser_sessions_in_use", "go_goroutines"} {
		if fams[name] == nil {
			t.Errorf("metric %s missing", name)
		}
	}
}

// TestTraceTree: with an in-memory exporter, a tool call over /mcp/http
// with a W3C traceparent makes the span tree transport → catalog → store in
// the caller's trace, whose id is the audit record's traceId; a run makes
// run → case → step spans in the trace of the call that started it, and its
// http step carries that trace's traceparent downstream — to a host inside
// the trace domain (DUET_TRACE_DOMAIN) only.
func TestTraceTree(t *testing.T) {
	t.Parallel()
	for _, domain := range []string{"127.0.0.1", "", "*.example.com"} {
		t.Run("domain "+domain, func(t *testing.T) {
			t.Parallel()
			testTraceTree(t, domain)
		})
	}
}

func testTraceTree(t *testing.T, domain string) {
	exp := tracetest.NewInMemoryExporter()
	tel := telemetry.New(telemetry.Options{Exporter: exp, Sync: true})
	a := openAppTelemetry(t, map[string]string{"DUET_TRACE_DOMAIN": domain}, tel)
	var mu sync.Mutex
	var seen []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(target.Close)
	ctx := t.Context()
	suite, err := compiler.CompileSuite(ctx, []byte("task: {name: traced, baseURL: "+target.URL+"}\ncases:\n  - title: pings\n    steps:\n      - http: {url: /ping, saveAs: r}\n      - assert: r.body.ok == true\n"),
		"s.yaml", a.CompilerOptions(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Store.ApplySuite(ctx, "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler(app.ServeOptions{}))
	t.Cleanup(srv.Close)
	tok := patFor(t, a, "alice")

	const traceID = "4bf92f3577b34da6a1a9c0e6b7c2d1e0"
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp/http", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_test_run","arguments":{"taskId":"`+res.Task.ID+`","idempotencyKey":"k1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Duet-Trace-Id") != traceID {
		t.Fatalf("start_test_run: %d, trace id %q", resp.StatusCode, resp.Header.Get("X-Duet-Trace-Id"))
	}
	runs, _, err := a.Store.FindRuns(ctx, duet.RunFilter{Viewer: "alice"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	if ok, err := a.Worker.ExecuteRun(ctx, runs[0].ID); !ok || err != nil {
		t.Fatalf("ExecuteRun: %v %v", ok, err)
	}
	a.Audit.Close()
	recs, _ := a.Store.FindAudit(ctx, duet.AuditFilter{Tool: "start_test_run"})
	if len(recs) != 1 || recs[0].TraceID != traceID {
		t.Fatalf("audit: %+v, want traceId %s", recs, traceID)
	}

	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != traceID {
			continue
		}
		if _, dup := byName[s.Name]; !dup {
			byName[s.Name] = s
		}
	}
	parentOf := func(child string) string {
		c, ok := byName[child]
		if !ok {
			return "(no span " + child + ")"
		}
		for name, s := range byName {
			if s.SpanContext.SpanID() == c.Parent.SpanID() {
				return name
			}
		}
		return "(remote)"
	}
	var names []string
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for child, parent := range map[string]string{
		"HTTP POST /mcp/http":               "(remote)", // the caller's traceparent
		"catalog tools/call start_test_run": "HTTP POST /mcp/http",
		"store.FindTaskByID":                "catalog tools/call start_test_run",
		"store.CreateRun":                   "catalog tools/call start_test_run",
		"run":                               "(remote)", // joins the trace of the call that started it
		"case pings":                        "run",
		"step 1 http":                       "case pings",
		"step 2 assert":                     "case pings",
		"HTTP GET":                          "run",
	} {
		if got := parentOf(child); got != parent {
			t.Errorf("span %q: parent %q, want %q (spans in the trace: %v)", child, got, parent, names)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if domain != "127.0.0.1" {
		if len(seen) != 1 || seen[0] != "" {
			t.Errorf("the http step's request to a host outside the trace domain %q carried traceparent %q, want none", domain, seen)
		}
		return
	}
	if len(seen) != 1 || !strings.Contains(seen[0], traceID) {
		t.Errorf("the http step's request carried traceparent %q, want trace %s", seen, traceID)
	}
}

// TestInvokeTrace: a call to a registered MCP server through invoke() is a
// span of the caller's trace, its HTTP request a child span, and the
// server receives the W3C traceparent of that request — when its host is
// inside the trace domain (DUET_TRACE_DOMAIN); any other server receives
// none, with traces on or off.
func TestInvokeTrace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		domain  string
		tracing bool
		want    bool // the server receives a traceparent
	}{
		{"127.0.0.1", true, true},
		{"*", true, true},
		{"", true, false},
		{"mcp.example.com,*.example.com", true, false},
		{"", false, false},
		{"127.0.0.1", false, true},
	} {
		t.Run(fmt.Sprintf("domain %q tracing %t", tc.domain, tc.tracing), func(t *testing.T) {
			t.Parallel()
			testInvokeTrace(t, tc.domain, tc.tracing, tc.want)
		})
	}
}

func testInvokeTrace(t *testing.T, domain string, tracing, want bool) {
	exp := tracetest.NewInMemoryExporter()
	opts := telemetry.Options{Sync: true}
	if tracing {
		opts.Exporter = exp
	}
	tel := telemetry.New(opts)
	a := openAppTelemetry(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_TRACE_DOMAIN": domain}, tel)
	var mu sync.Mutex
	var seen []string
	mcpSrv := mcptest.Streamable(mcptest.NewServer("orders", nil), true, true)
	url := mcptest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Traceparent"))
		mu.Unlock()
		mcpSrv.ServeHTTP(w, r)
	}))
	ctx := t.Context()
	if _, err := a.MCPClient.Register(ctx, mcpclient.Registration{Owner: "alice", Name: "orders", URL: url}); err != nil {
		t.Fatal(err)
	}
	s, err := a.MCPClient.Sync(ctx, "alice", "orders")
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	cctx, end := tel.Observe(ctx, catalog.Op{Caller: duet.Caller{UserID: "alice", Source: duet.SourceAgent, TraceID: traceID}, Method: "tools/call", Name: "generate"})
	res, err := a.Agent.Invoker.Invoke(cctx, duet.InvokeRequest{Executor: "alice", ServerKey: s.ServerKey, Tool: "add",
		Arguments: map[string]any{"a": 2, "b": 3}, Source: duet.SourceAgent, TraceID: traceID})
	end(err)
	if err != nil || res.IsError {
		t.Fatalf("invoke: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if !want {
		for _, tp := range seen {
			if tp != "" {
				t.Errorf("the MCP server outside the trace domain %q saw traceparent %q, want none", domain, tp)
			}
		}
		return
	}
	if !tracing {
		// Duet's own header: the call's trace id, a new span id.
		if !slices.ContainsFunc(seen, func(tp string) bool { return strings.HasPrefix(tp, "00-"+traceID+"-") }) {
			t.Errorf("the MCP server saw traceparent %q, want trace %s", seen, traceID)
		}
		return
	}
	spans := map[string]tracetest.SpanStub{}
	for _, sp := range exp.GetSpans() {
		if sp.SpanContext.TraceID().String() == traceID {
			spans[sp.Name] = sp
		}
	}
	call, inv, req := spans["catalog tools/call generate"], spans["invoke add"], spans["HTTP POST"]
	if !inv.SpanContext.IsValid() || inv.Parent.SpanID() != call.SpanContext.SpanID() || !req.SpanContext.IsValid() || req.Parent.SpanID() != inv.SpanContext.SpanID() {
		t.Fatalf("spans: catalog %v, invoke %v (parent %v), request %v (parent %v)", call.SpanContext.SpanID(), inv.SpanContext.SpanID(), inv.Parent.SpanID(), req.SpanContext.SpanID(), req.Parent.SpanID())
	}
	wantTP := "00-" + traceID + "-" + req.SpanContext.SpanID().String() + "-01"
	if !slices.Contains(seen, wantTP) {
		t.Errorf("the MCP server saw traceparent %q, want %q", seen, wantTP)
	}
}
