package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/webui"
)

// notPages are the console's GET routes that are not pages a person
// reads: they have no place in TestEveryPageInChromium.
var notPages = map[string]string{
	"GET /runs/{id}/events":    "the run's server-sent events (read by the run page's script)",
	"GET /runs/{id}/report":    "the run's report, a document of internal/report framed by the run page",
	"GET /record/{rid}/stream": "a recording's live view as server-sent events (read by the recorder page's script)",
	"GET /schema/suite.json":   "the suite format's JSON Schema, read by the suite editor's completion (TestEditorCompletesFromTheSchema)",
}

// consoleEntry is a message Chromium wrote to the console of a page.
type consoleEntry struct{ level, text string }

// consoleLog collects what a tab writes to its console: log entries (the
// browser's own, such as a pattern it cannot compile), console calls of
// scripts, and uncaught exceptions.
type consoleLog struct {
	mu      sync.Mutex
	entries []consoleEntry
}

func (l *consoleLog) listen(ctx context.Context, t *testing.T) {
	err := chromedp.Listen(ctx, func(ev any) {
		var e consoleEntry
		switch ev := ev.(type) {
		case *log.EventEntryAdded:
			e = consoleEntry{string(ev.Entry.Level), ev.Entry.Text + " " + ev.Entry.URL}
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			e = consoleEntry{string(ev.Type), strings.Join(parts, " ")}
		case *runtime.EventExceptionThrown:
			e = consoleEntry{"error", ev.ExceptionDetails.Text}
			if x := ev.ExceptionDetails.Exception; x != nil {
				e.text += " " + x.Description
			}
		default:
			return
		}
		l.mu.Lock()
		l.entries = append(l.entries, e)
		l.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// take returns the errors and warnings written since the last take.
func (l *consoleLog) take() []consoleEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []consoleEntry
	for _, e := range l.entries {
		if e.level == "error" || e.level == "warning" || e.level == "warn" || e.level == "assert" {
			out = append(out, e)
		}
	}
	l.entries = nil
	return out
}

// axeViolation is a rule of axe-core a page breaks.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axe runs axe-core (its axe.min.js, pinned in test/node) on the page and
// returns the violations of impact serious or critical.
func (p *page) axe(src string) []axeViolation {
	p.t.Helper()
	if !p.eval(`typeof window.axe === "object"`) {
		run(p, "inject axe-core", chromedp.Evaluate[chromedp.Void](src))
	}
	out := run(p, "axe.run", chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(
		r.violations.filter(v => v.impact === "serious" || v.impact === "critical").map(v => ({id: v.id, impact: v.impact, help: v.help,
			nodes: v.nodes.map(n => n.target.join(" ") + ": " + n.failureSummary)}))))`, chromedp.EvalAwaitPromise))
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		p.t.Fatalf("axe-core's answer: %v: %s", err, out)
	}
	return vs
}

// TestEveryPageInChromium opens every page of the console in Chromium —
// each GET route of the console (a new route without a visit here fails
// the test) — as alice with real data, at laptop and at phone width, and
// requires of each: no error or warning in the browser's console (a
// pattern attribute the browser cannot compile under the v flag is one),
// and no serious or critical violation that axe-core (pinned in test/node)
// finds; and in a form that is not a row, each label above its field. It
// also checks that the browser's own check of asset and team names is on:
// a name the server refuses is refused before it is sent.
func TestEveryPageInChromium(t *testing.T) {
	chromiumtest.Require(t)
	axeSrc, err := os.ReadFile(filepath.Join(mcptest.NodeDir(t), "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		if os.Getenv("DUET_REQUIRE_NODE") == "1" {
			t.Fatalf("axe-core is not installed in test/node: %v", err)
		}
		t.Skipf("axe-core is not installed in test/node: %v", err)
	}
	e := apptest.New(t, nil)
	pages := seedConsole(t, e)

	var missing []string
	for _, pat := range webui.GETPatterns() {
		if _, ok := pages[pat]; !ok && notPages[pat] == "" {
			missing = append(missing, pat)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("pages this test does not visit: %v (add each to seedConsole, or to notPages with the reason)", missing)
	}

	shots := os.Getenv("DUET_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	browser := startChromium(t)
	alice := tab(t, browser, e.URL, shots, "alice")
	var console consoleLog
	console.listen(alice.ctx, t)

	check := func(name string, expected ...string) {
		t.Helper()
		for _, width := range []struct {
			name string
			w, h int64
		}{{"laptop", 1280, 900}, {"phone", 390, 844}} {
			alice.do(width.name+" width", chromedp.EmulateViewport(width.w, width.h))
			// Every pattern is compiled: the browser compiles one when it
			// first checks a value against it.
			alice.eval(`[...document.querySelectorAll("input[pattern]")].every(e => { const v = e.value; e.value = "x"; e.checkValidity(); e.value = v; return true; })`)
			// A stacked form (not a row) puts each label above its field.
			for _, id := range run(alice, "labels", chromedp.Evaluate[[]string](`[...document.querySelectorAll("form label[for]")]
				.filter(l => l.offsetParent && !l.closest(".row, form.inline, label.check, .sr") && !l.classList.contains("sr"))
				.filter(l => { const c = document.getElementById(l.htmlFor); if (!c || !c.offsetParent) return false;
					return l.getBoundingClientRect().bottom > c.getBoundingClientRect().top + 1; })
				.map(l => l.htmlFor)`)) {
				t.Errorf("%s at %s width: the label of #%s is beside its field, not above it", name, width.name, id)
			}
			for _, v := range alice.axe(string(axeSrc)) {
				t.Errorf("%s at %s width: axe-core %s (%s): %s: %s", name, width.name, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "; "))
			}
			b := run(alice, "screenshot", chromedp.FullScreenshot(100))
			os.WriteFile(filepath.Join(shots, "every-"+strings.NewReplacer("/", "_", " ", "").Replace(name)+"-"+width.name+".png"), b, 0o644)
		}
		alice.do("laptop width", chromedp.EmulateViewport(1280, 900))
		for _, c := range console.take() {
			if !slices.ContainsFunc(expected, func(s string) bool { return strings.Contains(c.text, s) }) {
				t.Errorf("%s: the browser's console has a %s: %s", name, c.level, c.text)
			}
		}
	}

	// Signed out: the sign-in page.
	alice.open("/signin")
	check("GET /signin")
	alice.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), e.Tokens["alice"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
	console.take()

	patterns := slices.Sorted(func(yield func(string) bool) {
		for p := range pages {
			if !yield(p) {
				return
			}
		}
	})
	for _, pat := range patterns {
		if pat == "GET /signin" {
			continue
		}
		alice.open(pages[pat])
		check(pat)
	}
	alice.open("/audit")
	check("GET /audit (the audit records)")
	// The pages a form leads to: a new token, once; an error.
	alice.open("/tokens")
	alice.do("create a token", chromedp.SendKeys(chromedp.CSS("#token-name"), "laptop"), chromedp.Submit(chromedp.CSS("#token-name")),
		chromedp.WaitVisible(chromedp.CSS("#new-token")))
	check("the new token")
	alice.open("/tasks/task_nosuch")
	if !strings.Contains(alice.text("main"), "NOT_FOUND") {
		t.Fatalf("the error page: %s", alice.text("main"))
	}
	check("an error page", "the server responded with a status of 404 (Not Found) "+e.URL+"/tasks/task_nosuch") // the page itself

	// The names the server refuses are refused by the browser first: its
	// check of the pattern is on.
	for _, f := range []struct{ path, sel string }{{"/assets", "#name"}, {"/teams", "#team-name"}} {
		alice.open(f.path)
		for value, valid := range map[string]bool{"qa-team.v2_x": true, "Bad Name!": false, "-lead": false, "a": true, strings.Repeat("a", 64): true} {
			js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; return e.checkValidity(); })()`, f.sel, value)
			if got := alice.eval(js); got != valid {
				t.Errorf("%s %s = %q: the browser says valid %v, want %v (the pattern is off)", f.path, f.sel, value, got, valid)
			}
		}
		for _, c := range console.take() {
			t.Errorf("%s: the browser's console has a %s: %s", f.path, c.level, c.text)
		}
	}
}

// seedConsole gives alice a bit of everything the console shows — a task
// with runs, a registered server, an asset, a team with a listed server, a
// token — and returns a path for each page pattern.
func seedConsole(t *testing.T, e *apptest.Env) map[string]string {
	t.Helper()
	alice := signIn(t, e, "alice")
	mustSee := func(what string, status int, body string, resp *http.Response) string {
		t.Helper()
		if status != http.StatusSeeOther {
			t.Fatalf("%s: %d %.500s", what, status, body)
		}
		return strings.Split(resp.Header.Get("Location"), "?")[0]
	}
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {apptest.Suite("plain")}})
	taskPath := mustSee("apply", status, body, resp)
	// A webhook that every run tells (its deliveries stay pending: no
	// deliverer runs here), and a vault secret.
	status, body, resp = alice.post(taskPath+"/webhooks", url.Values{"name": {"chat"}, "url": {"http://127.0.0.1:9/hook"}, "events": {"run.finished", "case.broken"}, "on": {"always"}, "format": {"slack"}})
	mustSee("add a webhook", status, body, resp)
	status, body, resp = alice.post("/secrets", url.Values{"name": {"SHOP_PW"}, "value": {"hunter2"}})
	mustSee("set a secret", status, body, resp)
	var runPath string
	for i := range 3 {
		status, body, resp = alice.post(taskPath+"/runs", url.Values{"idempotencyKey": {fmt.Sprint("k", i)}})
		runPath = mustSee("start a run", status, body, resp)
		if ok, err := e.App.Worker.ExecuteRun(t.Context(), strings.TrimPrefix(runPath, "/runs/")); !ok || err != nil {
			t.Fatalf("run: %v %v", ok, err)
		}
	}
	status, body, resp = alice.post("/servers", url.Values{"name": {"orders"}, "url": {e.OrderURL}, "bearerToken": {e.OrderToken}})
	mustSee("register", status, body, resp)
	status, body, resp = alice.post("/assets", url.Values{"kind": {"skill"}, "name": {"checkout"}, "description": {"pay"}, "body": {"Pay with the test card."}})
	assetPath := mustSee("save an asset", status, body, resp)
	status, body, resp = alice.post("/teams", url.Values{"name": {"qa"}})
	teamPath := mustSee("create a team", status, body, resp)
	status, body, resp = alice.post(teamPath+"/servers", url.Values{"from": {"orders"}, "description": {"order lookups"}})
	mustSee("list a server", status, body, resp)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cases, _, _, err := e.App.Store.FindCases(ctx, duet.CaseFilter{TaskID: strings.TrimPrefix(taskPath, "/tasks/")})
	if err != nil || len(cases) == 0 {
		t.Fatalf("the task's cases: %v", err)
	}
	// A recording session on the sample shop (the recorder's page).
	shop := sampletest.Shop(t)
	status, body, resp = alice.post("/tasks/apply", url.Values{"source": {"task: {name: recorded, baseURL: " + shop + "}\ncases:\n  - key: a\n    title: A\n    steps:\n      - open: /\n"}})
	recTask := mustSee("apply the shop's task", status, body, resp)
	status, body, resp = alice.post(recTask+"/record", nil)
	recPath := mustSee("record a case", status, body, resp)
	return map[string]string{
		"GET /record/{rid}":                 recPath,
		"GET /signin":                       "/signin",
		"GET /{$}":                          "/",
		"GET /tasks":                        "/tasks",
		"GET /tasks/apply":                  "/tasks/apply",
		"GET /tasks/{id}":                   taskPath,
		"GET /tasks/{id}/edit":              taskPath + "/edit",
		"GET /tasks/{id}/trends":            taskPath + "/trends",
		"GET /tasks/{id}/webhooks":          taskPath + "/webhooks",
		"GET /alerts":                       "/alerts",
		"GET /secrets":                      "/secrets",
		"GET /cases/{id}":                   "/cases/" + cases[0].ID,
		"GET /runs":                         "/runs",
		"GET /runs/{id}":                    runPath,
		"GET /assets":                       "/assets",
		"GET /assets/{kind}/{owner}/{name}": assetPath,
		"GET /servers":                      "/servers",
		"GET /servers/{name}":               "/servers/orders",
		"GET /servers/{name}/tools/{tool}":  "/servers/orders/tools/query_order",
		"GET /teams":                        "/teams",
		"GET /teams/{team}":                 teamPath,
		"GET /audit":                        "/audit?view=invocations",
		"GET /tokens":                       "/tokens",
		"GET /baselines":                    "/baselines",
	}
}
