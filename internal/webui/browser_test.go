package webui_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write docs/console.png from the browser test")

// page is one browser tab of the console test.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
	shot string // the directory screenshots are saved in
	user string
}

// startChromium starts a headless Chromium for the test (Debian's
// chromium; --no-sandbox as root) and returns a tab in a fresh profile.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumtest.Require(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// tab opens a tab in a browser context of its own (its own cookies).
func tab(t *testing.T, browser context.Context, base, shots, user string) *page {
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first action opens the tab: with this context, not one derived
	// with a timeout (its end would close the tab).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return &page{t: t, ctx: ctx, base: base, shot: shots, user: user}
}

func (p *page) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("%s: %s: %v", p.user, what, err)
	}
}

func run[T any](p *page, what string, a chromedp.Action[T]) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		p.t.Fatalf("%s: %s: %v", p.user, what, err)
	}
	return v
}

func (p *page) open(path string) {
	p.t.Helper()
	p.do("open "+path, chromedp.Navigate(p.base+path), chromedp.WaitReady(chromedp.CSS("body")))
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return run(p, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// liveText is the text of sel on a page that may be replacing itself (the
// run page reloads when the run ends): "" while sel is not there or the
// document is being swapped, never a failure.
func (p *page) liveText(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).textContent || ""`))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

func (p *page) eval(js string) bool {
	p.t.Helper()
	return run(p, js, chromedp.Evaluate[bool](js))
}

// screenshot saves the whole page as NAME.png in the artifact directory.
func (p *page) screenshot(name string) {
	p.t.Helper()
	b := run(p, "screenshot", chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(p.shot, p.user+"-"+name+".png"), b, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// accessible checks what keyboard and screen-reader users rely on: every
// visible field has a label, and the page does not scroll sideways at
// phone width.
func (p *page) accessible(name string) {
	p.t.Helper()
	unlabelled := run(p, "labels", chromedp.Evaluate[[]string](`[...document.querySelectorAll('input:not([type=hidden]),select,textarea')]
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')).map(e => e.name || e.id)`))
	if len(unlabelled) > 0 {
		p.t.Errorf("%s: fields without a label: %v", name, unlabelled)
	}
	p.do("phone width", chromedp.EmulateViewport(390, 844))
	if !p.eval(`document.documentElement.scrollWidth <= window.innerWidth + 1`) {
		w := run(p, "width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		p.t.Errorf("%s: at 390px the page is %dpx wide (scrolls sideways)", name, w)
	}
	b := run(p, "screenshot", chromedp.FullScreenshot(100))
	os.WriteFile(filepath.Join(p.shot, p.user+"-"+name+"-phone.png"), b, 0o644)
	p.do("laptop width", chromedp.EmulateViewport(1280, 900))
}

// visit opens a page, checks it, and saves its screenshot.
func (p *page) visit(path, name string) {
	p.t.Helper()
	p.open(path)
	p.accessible(name)
	p.screenshot(name)
	if t := run(p, "title", chromedp.Title()); strings.Contains(t, "pwned") {
		p.t.Fatalf("%s: a payload ran: title %q", path, t)
	}
}

// evilServer is another team's MCP server whose tool description carries
// markup and script.
func evilServer(t *testing.T) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "evil", Version: "1"}, nil)
	type in struct {
		Q string `json:"q" jsonschema:"<b>bold</b> query"`
	}
	type out struct {
		Echo string `json:"echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: `Looks up <img src=x onerror="document.title='pwned'"> <script>document.title='pwned'</script>`},
		func(ctx context.Context, req *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
			return nil, out{Echo: `<img src=x onerror="document.title='pwned'">` + i.Q}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

// TestConsoleInABrowser drives the console in Chromium against a real
// `duet serve` (app.Serve: HTTP, run workers) with a SQLite store, the
// sample shop and the sample order MCP server: alice signs in with the
// keyboard, registers the order server, calls query_order by hand, applies
// and opens a task, starts a run, watches it finish live, opens its report
// and sees the screenshot; XSS payloads in a task name, a case and a tool
// description render as text; a state change without the CSRF token is
// refused; bob sees nothing of alice's and cannot call her registration.
// Every page is screenshotted (laptop and phone width) into
// DUET_CONSOLE_SCREENSHOTS, or a temporary directory.
func TestConsoleInABrowser(t *testing.T) {
	chromiumtest.Require(t)
	shots := os.Getenv("DUET_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	e := apptest.Serve(t, map[string]string{"DUET_WORKERS": "1", "DUET_BROWSERS": "1"})
	shopURL := sampletest.Shop(t)
	evilURL := evilServer(t)
	browser := startChromium(t)
	alice := tab(t, browser, e.URL, shots, "alice")

	// Sign in with the keyboard: the token field has the focus; Enter submits.
	alice.open("/tasks")
	if loc := run(alice, "location", chromedp.Location()); !strings.Contains(loc, "/signin?next=") {
		t.Fatalf("not signed in: %s, want the sign-in page", loc)
	}
	alice.accessible("signin")
	alice.screenshot("signin")
	alice.do("type the token", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.KeyEvent(e.Tokens["alice"]), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
	if who := alice.text("#whoami"); who != "alice" {
		t.Fatalf("signed in as %q", who)
	}

	// Register the order server: the URL and the token, entered once.
	alice.open("/servers")
	alice.do("register order-query", chromedp.SendKeys(chromedp.CSS("#name"), "order-query"), chromedp.SendKeys(chromedp.CSS("#url"), e.OrderURL),
		chromedp.SendKeys(chromedp.CSS("#bearerToken"), e.OrderToken), chromedp.Click(chromedp.CSS("#register")), chromedp.WaitVisible(chromedp.CSS("#server-key")))
	if key := alice.text("#server-key"); !strings.HasPrefix(key, "mcp_") {
		t.Fatalf("serverKey %q", key)
	}
	if html := run(alice, "html", chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(html, e.OrderToken) {
		t.Fatal("the server page renders the credential")
	}
	alice.visit("/servers/order-query", "server")

	// Call query_order by hand: the form comes from the input schema.
	alice.do("open query_order", chromedp.Click(chromedp.CSS(`a.tool-link[href$="/query_order"]`)), chromedp.WaitVisible(chromedp.CSS("#call-form")))
	alice.do("call it", chromedp.SendKeys(chromedp.CSS(`input[name="arg.orderId"]`), "A1001"), chromedp.Click(chromedp.CSS("#call")),
		chromedp.WaitVisible(chromedp.CSS("#invocation")))
	if s := alice.text("#result-structured"); !strings.Contains(s, `"status": "paid"`) {
		t.Fatalf("structuredContent: %s", s)
	}
	if src, outcome := alice.text("#invocation-source"), alice.text("#invocation-outcome"); src != "web" || outcome != "OK" {
		t.Fatalf("invocation record: source %q outcome %q", src, outcome)
	}
	alice.accessible("tool-call")
	alice.screenshot("tool-call")

	// Another team's server: its tool description is text, not markup.
	alice.open("/servers")
	alice.do("register evil", chromedp.SendKeys(chromedp.CSS("#name"), "partner"), chromedp.SendKeys(chromedp.CSS("#url"), evilURL),
		chromedp.Click(chromedp.CSS("#register")), chromedp.WaitVisible(chromedp.CSS("#server-key")))
	if d := alice.text(".tool-description"); !strings.Contains(d, `<img src=x onerror=`) || !strings.Contains(d, "<script>") {
		t.Fatalf("the tool description is not shown as text: %q", d)
	}
	if alice.eval(`document.querySelectorAll('.tool-description img, .tool-description script, main b').length > 0`) {
		t.Fatal("the tool description became markup")
	}
	alice.visit("/servers/partner/tools/lookup", "tool-evil")
	alice.do("call lookup", chromedp.SendKeys(chromedp.CSS(`input[name="arg.q"]`), "<b>hi</b>"), chromedp.Click(chromedp.CSS("#call")),
		chromedp.WaitVisible(chromedp.CSS("#call-result")))
	if alice.eval(`document.querySelectorAll('#call-result img, #call-result b').length > 0`) || strings.Contains(run(alice, "title", chromedp.Title()), "pwned") {
		t.Fatal("a tool result became markup")
	}

	// Apply the shop suite (and a task whose name is a payload), open it.
	src, err := duet.Examples.ReadFile("examples/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alice.open("/tasks/apply")
	alice.do("apply the shop suite", chromedp.SetValue(chromedp.CSS("#source"), string(src)), chromedp.SendKeys(chromedp.CSS("#baseUrl"), shopURL),
		chromedp.Submit(chromedp.CSS("#source")), chromedp.WaitVisible(chromedp.CSS("#start-run")))
	taskURL := run(alice, "location", chromedp.Location())
	taskPath := strings.TrimPrefix(strings.Split(taskURL, "?")[0], e.URL)
	payload := `<img src=x onerror="document.title='pwned'">`
	alice.open("/tasks/apply")
	quoted := "'" + strings.ReplaceAll(payload, "'", "''") + "'"
	alice.do("apply the payload", chromedp.SetValue(chromedp.CSS("#source"), "task:\n  name: "+quoted+"\ncases:\n  - key: a\n    title: "+quoted+"\n    steps:\n      - set: {x: '1'}\n"),
		chromedp.Submit(chromedp.CSS("#source")), chromedp.WaitVisible(chromedp.CSS("#start-run")))
	privatePath := strings.TrimPrefix(strings.Split(run(alice, "location", chromedp.Location()), "?")[0], e.URL)
	if h1 := alice.text("h1"); h1 != payload {
		t.Fatalf("the task name is shown as %q, want the text %q", h1, payload)
	}
	alice.do("open the case", chromedp.Click(chromedp.CSS("details.case summary")))
	if alice.eval(`document.querySelectorAll('main img').length > 0`) {
		t.Fatal("the task name or case title became markup")
	}
	alice.visit("/tasks", "tasks")
	if alice.eval(`document.querySelectorAll('main img').length > 0`) {
		t.Fatal("a task name became markup in the list")
	}
	alice.visit(taskPath, "task")

	// Start a run and watch it finish live.
	alice.do("start the run", chromedp.Click(chromedp.CSS("#start-run")), chromedp.WaitVisible(chromedp.CSS("#run-status")))
	runURL := run(alice, "location", chromedp.Location())
	runPath := strings.TrimPrefix(strings.Split(runURL, "?")[0], e.URL)
	first := alice.text("#run-status")
	t.Logf("the run page opened with status %q", first)
	deadline := time.Now().Add(3 * time.Minute)
	for status := first; status != "passed"; status = alice.liveText("#run-status") {
		if duet.RunStatus(status).Final() {
			t.Fatalf("the run ended %s: %s", status, run(alice, "text", chromedp.Text(chromedp.CSS("#executions"))))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not finish: %s", status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if loc := run(alice, "location", chromedp.Location()); !strings.HasSuffix(strings.Split(loc, "?")[0], runPath) {
		t.Fatalf("the page moved to %s", loc)
	}
	if duet.RunStatus(first).Final() {
		t.Log("the run had finished before its page opened: the live part was not observed this time")
	}
	alice.do("the report frame", chromedp.WaitVisible(chromedp.CSS("iframe#report")), chromedp.Sleep(2*time.Second))
	alice.screenshot("run")
	if *updateScreenshot {
		alice.do("viewport", chromedp.EmulateViewport(1280, 860))
		b := run(alice, "screenshot", chromedp.CaptureScreenshot())
		if err := os.WriteFile("../../docs/console.png", b, 0o644); err != nil {
			t.Fatal(err)
		}
		alice.do("viewport", chromedp.EmulateViewport(1280, 900))
	}
	alice.accessible("run")

	// The report: the same HTML report, the screenshot inline.
	alice.open(runPath + "/report")
	if n := run(alice, "screenshots", chromedp.Evaluate[int](`[...document.images].filter(i => i.src.startsWith('data:image/')).length`)); n == 0 {
		t.Fatal("the report has no screenshot")
	}
	// Screenshots load lazily: bring the first into view and wait until
	// it is decoded.
	// Open the case that took it (passed cases start folded).
	alice.do("open the order case", chromedp.Click(chromedp.CSS(`details:has(img[src^="data:image/"]) > summary`)),
		chromedp.ScrollIntoView(chromedp.CSS(`img[src^="data:image/"]`)))
	for i := 0; !alice.eval(`[...document.images].some(i => i.src.startsWith('data:image/') && i.complete && i.naturalWidth > 0)`); i++ {
		if i == 600 { // a minute: a loaded machine's budget
			t.Fatalf("the report's screenshot does not display: %v", run(alice, "img", chromedp.Evaluate[[]string](`[...document.images].map(i => i.src.slice(0, 40) + ' ' + i.complete + ' ' + i.naturalWidth + ' ' + i.loading)`)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	alice.screenshot("report")
	for _, p := range [][2]string{{taskPath + "/trends", "trends"}, {"/runs", "runs"}, {"/assets", "assets"}, {"/teams", "teams"},
		{"/audit", "audit"}, {"/tokens", "tokens"}, {"/audit?view=invocations", "invocations"}} {
		alice.visit(p[0], p[1])
	}
	// The invocation records of the manual calls are there, with source web.
	if !strings.Contains(alice.text("#records"), "query_order") {
		t.Fatal("the invocations page lacks the manual call")
	}

	// A state change without the CSRF token is refused.
	alice.open(taskPath)
	alice.do("drop the CSRF token and share", chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action$="/share"] input[name=csrf]').remove()`),
		chromedp.SendKeys(chromedp.CSS("#share-with"), "mallory"), chromedp.Submit(chromedp.CSS("#share-with")), chromedp.WaitVisible(chromedp.CSS("p.error")))
	if msg := alice.text("p.error"); !strings.Contains(msg, "PERMISSION_DENIED") || !strings.Contains(msg, "CSRF") {
		t.Fatalf("share without the CSRF token: %q", msg)
	}
	alice.screenshot("csrf-refused")
	alice.open(taskPath)
	if shares := alice.text("#task-shares"); strings.Contains(shares, "mallory") {
		t.Fatalf("the refused request shared the task: %q", shares)
	}

	// bob signs in. The shop task is shared with him (sharedWith: [bob]):
	// he sees it and its run, restricted — the run used alice's
	// credentials. Nothing private of alice's shows: not her other task,
	// her servers, her assets, tokens or records; not her registration.
	bob := tab(t, browser, e.URL, shots, "bob")
	bob.open("/signin")
	bob.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["bob"]), chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS("#whoami")))
	for _, p := range []string{"/tasks", "/runs", "/assets", "/servers", "/teams", "/audit", "/audit?view=invocations", "/tokens"} {
		bob.visit(p, strings.NewReplacer("/", "", "?", "-", "=", "-").Replace(p))
		html := run(bob, "html", chromedp.OuterHTML(chromedp.CSS("main")))
		for _, s := range []string{privatePath[len("/tasks/"):], "order-query", "partner", "query_order", "onerror"} {
			if strings.Contains(html, s) {
				t.Errorf("bob's %s shows %q", p, s)
			}
		}
	}
	for _, p := range []string{privatePath, privatePath + "/trends", "/servers/order-query", "/servers/order-query/tools/query_order", "/servers/partner"} {
		bob.open(p)
		if msg := bob.text("main"); !strings.Contains(msg, "NOT_FOUND") {
			t.Errorf("bob opens alice's %s: %q, want NOT_FOUND", p, msg)
		}
	}
	bob.open(runPath)
	if msg := bob.text("main"); !strings.Contains(msg, "shown only to them") {
		t.Errorf("bob's view of alice's run of the shared task is not restricted: %q", msg)
	}
	bob.open(runPath + "/report")
	if n := run(bob, "images", chromedp.Evaluate[int](`[...document.images].filter(i => i.src.startsWith('data:image/')).length`)); n != 0 {
		t.Errorf("bob sees %d of the screenshots alice's run took with her credentials", n)
	}
	bob.open(privatePath)
	bob.screenshot("not-found")
	// bob's own registration of the same address is his; calling alice's
	// by serverKey through the API is NOT_FOUND (the REST test checks every
	// route).
	status, body, _ := e.Call("bob", "POST", "/api/v1/servers/order-query/tools/query_order/call", map[string]any{"arguments": map[string]any{"orderId": "A1001"}})
	if status != http.StatusNotFound {
		t.Errorf("bob calls alice's registration: %d %s", status, body)
	}
	fmt.Fprintln(os.Stderr, "console screenshots:", shots)
}
