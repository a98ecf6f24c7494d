package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sample"
	"github.com/duet-test/duet/internal/sqlite"
)

// The browser tests run real cases in headless Chromium against the sample
// shop, with mcpCall steps answered by the sample order MCP server over
// loopback. They share one browser pool (one Chromium process) that
// TestMain closes.

var shared struct {
	once sync.Once
	pool *browser.Pool
}

// requireBrowser skips the test when there is no Chromium, unless
// DUET_REQUIRE_BROWSER=1 asks for a failure instead (scripts/test.sh sets it).
func requireBrowser(tb testing.TB) {
	tb.Helper()
	if err := browser.NewPool(browser.Options{}).Available(); err != nil {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			tb.Fatalf("DUET_REQUIRE_BROWSER=1 but no Chromium: %v", err)
		}
		tb.Skipf("skipping: %v (set DUET_REQUIRE_BROWSER=1 to fail instead)", err)
	}
}

// sharedPool returns the package's browser pool, started and warm, so that
// the timings of the tests do not include the browser start.
func sharedPool(tb testing.TB) *browser.Pool {
	tb.Helper()
	requireBrowser(tb)
	shared.once.Do(func() {
		shared.pool = browser.NewPool(browser.Options{MaxBrowsers: 1, MaxContextsPerBrowser: 12})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if s, err := shared.pool.NewSession(ctx, browser.Device{}, netguard.Allowance{}); err == nil {
			s.Close()
		}
	})
	return shared.pool
}

// ordersKey is the serverKey the suites use for the sample order server.
const ordersKey = "mcp_orders_0badcafe"

// orderService is the sample shop and the sample order MCP server over one
// order book, and a duet.Invoker that calls the server over a real go-sdk
// client session on loopback. It records the calls.
type orderService struct {
	orders  *sample.Orders
	shopURL string
	cs      *mcp.ClientSession

	mu    sync.Mutex
	calls []duet.InvokeRequest
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func newOrderService(tb testing.TB) *orderService {
	tb.Helper()
	o := &orderService{orders: sample.NewOrders()}
	shopURL, stopShop, err := sample.StartShop(context.Background(), "127.0.0.1:0", o.orders)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stopShop)
	o.shopURL = shopURL
	const token = "engine-test-token"
	mcpURL, stopMCP, err := sample.StartOrderServer(context.Background(), "127.0.0.1:0", o.orders, token)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stopMCP)
	client := mcp.NewClient(&mcp.Implementation{Name: "duet-engine-test", Version: "0.0.1"}, nil)
	o.cs, err = client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: mcpURL, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { o.cs.Close() })
	return o
}

// Invoke calls the tool on the sample server when req names ordersKey.
func (o *orderService) Invoke(ctx context.Context, req duet.InvokeRequest) (*duet.ToolResult, error) {
	o.mu.Lock()
	o.calls = append(o.calls, req)
	o.mu.Unlock()
	if req.ServerKey != ordersKey {
		return nil, duet.Errorf(duet.CodeMCPServerNotConfigured, "%s has not configured MCP server %s", req.Executor, req.ServerKey)
	}
	res, err := o.cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Tool, Arguments: req.Arguments})
	if err != nil {
		if ctx.Err() != nil {
			return nil, duet.WrapError(duet.CodeMCPCallTimeout, err, "calling %s: %v", req.Tool, ctx.Err())
		}
		return nil, duet.WrapError(duet.CodeMCPUnreachable, err, "calling %s: %v", req.Tool, err)
	}
	content, err := json.Marshal(res.Content)
	if err != nil {
		return nil, err
	}
	tr := &duet.ToolResult{Content: content, IsError: res.IsError}
	if res.StructuredContent != nil {
		if tr.StructuredContent, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, err
		}
	}
	if res.IsError {
		return tr, duet.Errorf(duet.CodeMCPToolError, "%s", tr.Text())
	}
	return tr, nil
}

// argsOf returns the arguments of the recorded calls of tool.
func (o *orderService) argsOf(tool string) []map[string]any {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []map[string]any
	for _, c := range o.calls {
		if c.Tool == tool {
			out = append(out, c.Arguments)
		}
	}
	return out
}

// testSite serves pages the shop has no equivalent of: one that reports
// what the browser looks like, one whose content arrives late, and one that
// never finishes loading.
func testSite(tb testing.TB) *httptest.Server {
	tb.Helper()
	pages := map[string]string{
		"/device": `<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Device</title></head><body><p id="width"></p><p id="ua"></p><p id="touch"></p>
<script>
document.getElementById('width').textContent = String(window.innerWidth);
document.getElementById('ua').textContent = navigator.userAgent;
document.getElementById('touch').textContent = String('ontouchstart' in window);
</script></body></html>`,
		"/late": `<!doctype html><html><head><title>Late</title></head><body>
<p id="state">loading</p><div id="spinner">…</div>
<script>
setTimeout(() => {
  document.getElementById('state').textContent = 'ready';
  document.getElementById('spinner').style.display = 'none';
  const p = document.createElement('p'); p.id = 'late'; p.textContent = 'arrived'; document.body.appendChild(p);
}, 700);
</script></body></html>`,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

// browserEngine returns the options of an engine with the shared browser
// pool, an artifact store in a temporary directory and inv.
func browserEngine(tb testing.TB, inv duet.Invoker) (engine.Options, *artifact.Store) {
	tb.Helper()
	arts := artifact.New(filepath.Join(tb.TempDir(), "artifacts"), time.Hour)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return engine.Options{Browser: app.NewBrowser(sharedPool(tb)), Artifacts: arts, Invoker: inv, Parallel: 4, Logger: log}, arts
}

// startDeviceRun is startRun with a device preset for the run.
func startDeviceRun(t *testing.T, db *sqlite.DB, task *duet.Task, user, device string) *duet.Run {
	t.Helper()
	cases, _, _, err := db.FindCases(t.Context(), duet.CaseFilter{TaskID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: task.ID, TriggeredBy: user, CallSource: duet.SourceCLI, Device: device}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps, TimeoutMs: c.TimeoutMs})
	}
	if _, _, err := db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	return run
}

// awaitRun waits up to a minute for the run to end.
func awaitRun(t *testing.T, db *sqlite.DB, id string) (*duet.Run, map[string]*duet.Execution) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := db.FindRunByID(t.Context(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Final() {
			execs, err := db.FindExecutions(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]*duet.Execution{}
			for _, x := range execs {
				byKey[x.CaseKey] = x
			}
			return r, byKey
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not finish in a minute (status %s)", id, r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describe prints an execution's step results for failure messages.
func describe(x *duet.Execution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %s %s", x.CaseKey, x.Status, x.ErrorCode, x.ErrorMessage)
	for _, r := range x.Results {
		fmt.Fprintf(&b, "\n  %d %-13s %-9s %s %s (%d ms) out=%s", r.Index, r.Kind, r.Status, r.ErrorCode, r.ErrorMessage, r.DurationMs, r.Output)
	}
	return b.String()
}

func TestBrowserSteps(t *testing.T) {
	t.Parallel()
	svc := newOrderService(t)
	site := testSite(t)
	opts, arts := browserEngine(t, svc)
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: shop, baseURL: `+svc.shopURL+`}
cases:
  - key: login
    title: Sign in with the form
    steps:
      - set: {password: '"s3cret-pass"'}
      - open: /login
      - assertVisible: "#login-form"
      - assertVisible: {selector: "#error", visible: false}
      - fill: {selector: "#username", value: alice}
      - fill: {selector: "#password", value: "${password}"}
      - extract: {from: value, selector: "#username", as: typed}
      - select: {selector: "#language", value: Español}
      - extract: {from: value, selector: "#language", as: lang}
      - click: "#remember"
      - press: {key: Enter, selector: "#password"}
      - waitFor: {urlContains: "welcome="}
      - waitFor: {selector: "#welcome", visible: true}
      - waitFor: {text: "Bienvenido"}
      - waitFor: {urlMatches: "[?&]welcome=alice$"}
      - assertURL: {contains: "/?welcome=alice"}
      - assertURL: "welcome=alice"
      - assertText: {selector: "#welcome", equals: "¡Bienvenido, alice!"}
      - assertText: {selector: "#user", contains: alice}
      - extract: {from: url.query, param: welcome, as: who}
      - extract: {from: title, as: title}
      - assert: who == "alice" && typed == "alice" && lang == "es"
      - screenshot: {name: welcome page, fullPage: true}
  - key: order
    title: The order page agrees with the order service
    steps:
      - open: /order?orderId=A1001
      - extract: {from: url.query, param: orderId, as: orderId}
      - extract: {from: attr, selector: "#status", attr: data-status, as: shown}
      - extract: {from: text, selector: "#customer", as: customer}
      - extract: {from: url.segment, segment: -1, as: lastSegment}
      - extract: {from: url, as: pageUrl}
      - extract: {from: attr, selector: "#order", attr: data-order-id, as: sessionToken}
      - mcpCall:
          serverKey: `+ordersKey+`
          tool: query_order
          input:
            orderId: {source: page.url, path: orderId}
          saveAs: order
      - assertText: {selector: "#status", equals: "${order.structuredContent.order.status}"}
      - assert: order.structuredContent.order.status == shown && order.structuredContent.order.customer == customer
      - mcpCall:
          serverKey: `+ordersKey+`
          tool: list_orders
          input:
            status: {from: page.text, selector: "#status"}
          saveAs: same
      - assert: len(same.structuredContent.orders) == 1 && same.structuredContent.orders[0].id == orderId
      - mcpCall:
          serverKey: `+ordersKey+`
          tool: query_order
          input:
            orderId: {from: page.attr, selector: "#order", attr: data-order-id}
          saveAs: byAttr
      - mcpCall:
          serverKey: `+ordersKey+`
          tool: query_order
          input:
            orderId: {from: page.title}
          failurePolicy: optional
      - click: "#refresh"
      - waitFor: {text: "Status refreshed"}
      - assertText: {selector: "#message", matches: "^Status refreshed: paid$"}
      - screenshot: viewport
  - key: cancel
    title: Cancelling in the shop shows in the order service
    steps:
      - open: /order?orderId=A1002
      - assertVisible: {selector: "#cancel-confirm", visible: false}
      - click: "#cancel"
      - assertVisible: "#cancel-confirm"
      - click: "#cancel-yes"
      - waitFor: {selector: "#message", text: "Order cancelled"}
      - assertText: {selector: "#status", equals: cancelled}
      - mcpCall:
          serverKey: `+ordersKey+`
          tool: query_order
          input: {orderId: {from: page.url, param: orderId}}
          saveAs: after
      - assert: after.structuredContent.order.status == "cancelled"
  - key: late
    title: Assertions wait for content that arrives late
    steps:
      - open: `+site.URL+`/late
      - assertText: {selector: "#state", equals: ready}
      - assertVisible: "#late"
      - assertVisible: {selector: "#spinner", visible: false}
      - assertURL: {matches: "/late$"}
`)
	w, _, _ := worker(t, db, opts, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final, execs := awaitRun(t, db, run.ID)
	if final.Status != duet.StatusPassed {
		for _, x := range execs {
			t.Log(describe(x))
		}
		t.Fatalf("run: got %s (%s %s), want passed", final.Status, final.ErrorCode, final.ErrorMessage)
	}

	// Every browser step kind ran.
	kinds := map[duet.StepKind]bool{}
	for _, x := range execs {
		for _, r := range x.Results {
			kinds[r.Kind] = true
		}
	}
	for _, k := range []duet.StepKind{duet.StepOpen, duet.StepClick, duet.StepFill, duet.StepPress, duet.StepSelect, duet.StepWaitFor,
		duet.StepAssertText, duet.StepAssertVisible, duet.StepAssertURL, duet.StepExtract, duet.StepScreenshot, duet.StepMCPCall} {
		if !kinds[k] {
			t.Errorf("no %s step ran", k)
		}
	}

	login, order := execs["login"], execs["order"]
	wantVars := map[string]any{"who": "alice", "typed": "alice", "lang": "es", "password": "[redacted]"}
	for k, want := range wantVars {
		if got := login.Vars[k]; got != want {
			t.Errorf("login variable %s: got %v, want %v", k, got, want)
		}
	}
	if title, _ := login.Vars["title"].(string); !strings.Contains(title, "Orders") {
		t.Errorf("login variable title: got %q, want the orders page title", title)
	}
	if v, _ := json.Marshal(login); bytes.Contains(v, []byte("s3cret-pass")) {
		t.Errorf("the password variable is stored in clear: %s", v)
	}

	// The page bindings fed the calls.
	wantOrder := map[string]any{"orderId": "A1001", "shown": "paid", "customer": "Alice Chen", "lastSegment": "order",
		"pageUrl": svc.shopURL + "/order?orderId=A1001", "sessionToken": "[redacted]"}
	for k, want := range wantOrder {
		if got := order.Vars[k]; got != want {
			t.Errorf("order variable %s: got %v, want %v", k, got, want)
		}
	}
	queries := svc.argsOf(sample.ToolQueryOrder)
	var ids []string
	for _, a := range queries {
		ids = append(ids, fmt.Sprint(a["orderId"]))
	}
	for _, want := range []string{"A1001", "Order A1001 · Sample Shop", "A1002"} {
		if !strings.Contains(strings.Join(ids, "|"), want) {
			t.Errorf("query_order arguments: got %q, want a call with orderId %q", ids, want)
		}
	}
	if lists := svc.argsOf(sample.ToolListOrders); len(lists) != 1 || lists[0]["status"] != "paid" {
		t.Errorf("list_orders arguments: got %v, want status paid from page.text", lists)
	}
	if r := order.Results[13]; r.Kind != duet.StepMCPCall || !r.Optional || r.ErrorCode != duet.CodeMCPToolError {
		t.Errorf("the optional page.title call: got %+v, want an optional MCP_TOOL_ERROR", r)
	}
	if o, _ := svc.orders.Get("A1002"); o.Status != sample.StatusCancelled {
		t.Errorf("A1002 after the cancel flow: got %s, want cancelled", o.Status)
	}

	// Screenshots on demand are stored and readable.
	for _, x := range []*duet.Execution{login, order} {
		last := x.Results[len(x.Results)-1]
		if last.Kind != duet.StepScreenshot || len(last.Artifacts) != 0 {
			t.Errorf("%s: last step %+v, want a screenshot with its id in the output", x.CaseKey, last)
		}
		var out struct {
			Artifact string
			Bytes    float64
		}
		if err := json.Unmarshal(last.Output, &out); err != nil || out.Artifact == "" {
			t.Fatalf("%s screenshot output: got %s, want {artifact, bytes}", x.CaseKey, last.Output)
		}
		png, err := arts.Read(t.Context(), out.Artifact)
		if err != nil || artifact.ContentType(png) != "image/png" || float64(len(png)) != out.Bytes {
			t.Errorf("%s screenshot %s: got %d bytes (%s), err %v; want a PNG of %v bytes", x.CaseKey, out.Artifact, len(png), artifact.ContentType(png), err, out.Bytes)
		}
	}
}

func TestBrowserFailures(t *testing.T) {
	t.Parallel()
	svc := newOrderService(t)
	opts, arts := browserEngine(t, svc)
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: failures, baseURL: `+svc.shopURL+`}
cases:
  - key: wrong-status
    title: A wrong expectation fails with a screenshot
    steps:
      - open: /order?orderId=A1003
      - assertText: {selector: "#status", equals: paid}
        timeout: 8s
      - click: "#refresh"
  - key: wait-timeout
    title: waitFor gives up at its timeout
    steps:
      - open: /order?orderId=A1001
      - waitFor: {selector: "#never"}
        timeout: 5s
  - key: missing-element
    title: A click on a missing element
    steps:
      - open: /login
      - click: "#nope"
        timeout: 5s
  - key: case-timeout
    title: The case runs out of time
    timeout: 4s
    steps:
      - open: /order?orderId=A1001
      - waitFor: {text: "never shown"}
        timeout: 1m
  - key: bad-binding
    title: A page binding that finds nothing
    steps:
      - open: /order?orderId=A1001
      - mcpCall:
          serverKey: `+ordersKey+`
          tool: query_order
          input: {orderId: {from: page.url, param: id}}
  - key: not-visible
    title: An element that stays hidden
    steps:
      - open: /order?orderId=A1001
      - assertVisible: "#cancel-confirm"
`)
	w, _, _ := worker(t, db, opts, engine.WorkerOptions{})
	opts.Parallel = 6
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final, execs := awaitRun(t, db, run.ID)
	if final.Status != duet.StatusFailed || final.Totals.Failed != 6 {
		t.Errorf("run: got %s with %+v, want failed with 6 failed cases", final.Status, final.Totals)
	}
	tests := []struct {
		key      string
		step     int
		code     duet.Code
		contains string
	}{
		{"wrong-status", 1, duet.CodeAssertionFailed, `text of #status is "shipped", want "paid"`},
		{"wait-timeout", 1, duet.CodeStepTimeout, `"#never"`},
		{"missing-element", 1, duet.CodeElementNotFound, `"#nope"`},
		{"case-timeout", -1, duet.CodeCaseTimeout, "ran out of time"}, // the open may already run out of time on a busy machine
		{"bad-binding", 1, duet.CodeBindingFailed, `no query parameter "id"`},
		{"not-visible", 1, duet.CodeAssertionFailed, "#cancel-confirm is not visible"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			x := execs[tt.key]
			if x == nil {
				t.Fatalf("no execution %s", tt.key)
			}
			step := tt.step
			for i, r := range x.Results {
				if step < 0 && r.Status != duet.StatusPassed && r.Status != duet.StatusSkipped {
					step = i
				}
			}
			if step < 0 && tt.step < 0 && x.Status == duet.StatusFailed && x.ErrorCode == tt.code && strings.Contains(x.ErrorMessage, tt.contains) {
				return // the time ran out between two steps: the case says so, no step failed
			}
			if step < 0 {
				t.Fatalf("got %s, want a failed step", describe(x))
			}
			r := x.Results[step]
			if x.Status != duet.StatusFailed || x.ErrorCode != tt.code || r.ErrorCode != tt.code || !strings.Contains(r.ErrorMessage, tt.contains) {
				t.Fatalf("got %s, want step %d failed with %s containing %q", describe(x), step, tt.code, tt.contains)
			}
			for _, later := range x.Results[step+1:] {
				if later.Status != duet.StatusSkipped {
					t.Errorf("step %d after the failure: got %s, want skipped", later.Index, later.Status)
				}
			}
			// A failed step leaves a screenshot of the page as it was
			// (unless the case ran out of time in the middle of a load).
			if tt.key == "case-timeout" && r.Kind == duet.StepOpen {
				return
			}
			if len(r.Artifacts) != 1 || !strings.HasSuffix(r.Artifacts[0], "failure.png") {
				t.Fatalf("artifacts of the failed step: got %q, want one failure screenshot", r.Artifacts)
			}
			png, err := arts.Read(t.Context(), r.Artifacts[0])
			if err != nil || artifact.ContentType(png) != "image/png" {
				t.Errorf("failure screenshot: got %d bytes, %v; want a PNG", len(png), err)
			}
		})
	}
	// The assertion retried for its whole timeout, not for the 5 s default:
	// a lower bound, which a loaded machine meets too (the timeouts above
	// are seconds, so that each failing step sees the page answer before
	// it gives up and says why: 500 ms and 1 s, and a window of 0.9-4 s,
	// are not met under load).
	if d := execs["wrong-status"].Results[1].DurationMs; d < 7500 {
		t.Errorf("assertText with timeout 8s took %d ms, want at least 8000 (its timeout, not the 5 s default)", d)
	}
}

func TestBrowserDevices(t *testing.T) {
	t.Parallel()
	site := testSite(t)
	opts, _ := browserEngine(t, nil)
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: devices, baseURL: `+site.URL+`, device: pixel-7}
cases:
  - key: probe
    title: What the page sees
    steps:
      - open: /device
      - extract: {from: text, selector: "#width", as: width}
      - extract: {from: text, selector: "#ua", as: ua}
      - extract: {from: text, selector: "#touch", as: touch}
`)
	w, _, _ := worker(t, db, opts, engine.WorkerOptions{Concurrency: 4})
	tests := []struct {
		device, width, ua, touch string
	}{
		{"", "412", "Android", "true"}, // the task's device
		{"iphone-15", "393", "iPhone", "true"},
		{"ipad", "820", "iPad", "true"},
		{"desktop", "1280", "HeadlessChrome", "false"},
	}
	runs := make([]*duet.Run, len(tests))
	for i, tt := range tests {
		runs[i] = startDeviceRun(t, db, res.Task, "alice", tt.device)
	}
	w.Notify()
	for i, tt := range tests {
		t.Run("device="+tt.device, func(t *testing.T) {
			final, execs := awaitRun(t, db, runs[i].ID)
			x := execs["probe"]
			if final.Status != duet.StatusPassed {
				t.Fatalf("got %s", describe(x))
			}
			if got := x.Vars["width"]; got != tt.width {
				t.Errorf("window.innerWidth: got %v, want %s", got, tt.width)
			}
			if got, _ := x.Vars["ua"].(string); !strings.Contains(got, tt.ua) {
				t.Errorf("user agent: got %q, want it to contain %q", got, tt.ua)
			}
			if got := x.Vars["touch"]; got != tt.touch {
				t.Errorf("touch: got %v, want %s", got, tt.touch)
			}
		})
	}
}

func TestBrowserCancel(t *testing.T) {
	t.Parallel()
	svc := newOrderService(t)
	opts, _ := browserEngine(t, nil)
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: cancel, baseURL: `+svc.shopURL+`}
cases:
  - key: forever
    title: Waits for text that never comes
    steps:
      - open: /order?orderId=A1001
      - waitFor: {text: "never shown"}
        timeout: 5m
      - assertText: {selector: "#status", equals: paid}
`)
	w, _, _ := worker(t, db, opts, engine.WorkerOptions{CancelCheck: 50 * time.Millisecond})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	// Cancel while the waitFor runs.
	deadline := time.Now().Add(time.Minute)
	for {
		execs, err := db.FindExecutions(t.Context(), run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(execs[0].Results) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the open step did not finish: %s", describe(execs[0]))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if _, err := db.RequestCancel(t.Context(), "alice", run.ID); err != nil {
		t.Fatal(err)
	}
	final, execs := awaitRun(t, db, run.ID)
	took := time.Since(start)
	x := execs["forever"]
	if final.Status != duet.StatusCancelled || final.ErrorCode != duet.CodeCancelled {
		t.Fatalf("run: got %s %s, want cancelled", final.Status, final.ErrorCode)
	}
	// At once: far below the step's 5 minutes, far above a loaded
	// machine's delays.
	if took > time.Minute {
		t.Errorf("the run ended %s after the cancellation, want at once", took)
	}
	if r := x.Results[1]; r.Status != duet.StatusCancelled || r.ErrorCode != duet.CodeCancelled || len(r.Artifacts) != 0 {
		t.Errorf("the waitFor step: got %+v, want cancelled without a screenshot", r)
	}
	if r := x.Results[2]; r.Status != duet.StatusSkipped {
		t.Errorf("the step after: got %s, want skipped", r.Status)
	}
	if x.Status != duet.StatusCancelled {
		t.Errorf("execution: got %s, want cancelled", x.Status)
	}
}

// TestBrowserUnavailable needs no Chromium: a bogus executable makes browser
// steps fail with the install hint while other cases still run.
func TestBrowserUnavailable(t *testing.T) {
	t.Parallel()
	svc := newOrderService(t)
	pool := browser.NewPool(browser.Options{ExecPath: filepath.Join(t.TempDir(), "no-such-chromium")})
	t.Cleanup(pool.Close)
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: nobrowser, baseURL: `+svc.shopURL+`}
cases:
  - key: api
    title: The API still answers
    steps:
      - http: {url: /api/orders/A1001, saveAs: o}
      - assert: o.status == 200 && o.body.status == "paid"
  - key: web
    title: The page needs a browser
    steps:
      - open: /order?orderId=A1001
      - assertText: {selector: "#status", equals: paid}
`)
	w, _, _ := worker(t, db, engine.Options{Browser: app.NewBrowser(pool), Parallel: 2}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final, execs := awaitRun(t, db, run.ID)
	if final.Status != duet.StatusError || final.Totals.Passed != 1 || final.Totals.Error != 1 {
		t.Errorf("run: got %s %+v, want error with one case passed", final.Status, final.Totals)
	}
	if x := execs["api"]; x.Status != duet.StatusPassed {
		t.Errorf("api case: got %s", describe(x))
	}
	web := execs["web"]
	r := web.Results[0]
	if web.Status != duet.StatusError || r.ErrorCode != duet.CodeBrowserUnavailable {
		t.Fatalf("web case: got %s, want BROWSER_UNAVAILABLE", describe(web))
	}
	for _, hint := range []string{"apt-get install -y chromium", "DUET_CHROME_PATH"} {
		if !strings.Contains(r.ErrorMessage, hint) {
			t.Errorf("message %q: want the install hint %q", r.ErrorMessage, hint)
		}
	}
}
