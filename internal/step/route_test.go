package step_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/step"
)

// TestRouteMocksTheShopAPI: the lab's live orders page renders what the
// shop's API answers; routes make it answer an empty list, a 500 error, a
// failed network, and (times: 1) one error before the real list — in
// headless Chromium, through the Fetch domain. waitForResponse saves the
// mocked response; expectRequest counts what the page sent.
func TestRouteMocksTheShopAPI(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	for _, tt := range []struct {
		name, steps string
	}{
		{"the real API", `      - open: /lab/live
      - assertText: {role: status, name: Orders state, matches: "^[0-9]+ orders$"}
`},
		{"empty", `      - route: {url: "/api/orders*", json: {orders: []}}
      - open: /lab/live
      - assertText: {role: status, name: Orders state, equals: No orders yet.}
      - assertCount: {selector: "li.live-order", count: 0}
`},
		{"error", `      - route: {url: "**/api/orders?*", method: GET, status: 500, json: {error: {code: INTERNAL, message: "down for ${run.id == '' ? 'x' : 'maintenance'}"}}}
      - open: /lab/live
      - assertText: {role: status, name: Orders state, equals: "Could not load the orders (500): down for maintenance"}
`},
		{"offline", `      - route: {urlMatches: "/api/orders\\?limit=[0-9]+$", abort: connectionrefused}
      - open: /lab/live
      - assertText: {role: status, name: Orders state, equals: The network failed. Try again.}
`},
		{"once, then the network", `      - route: {url: "/api/orders*", status: 503, body: "busy", times: 1}
      - open: /lab/live
      - assertText: {role: status, name: Orders state, equals: "Could not load the orders (503)"}
      - waitForResponse: {url: "/api/orders*", saveAs: busy}
      - assert: busy.status == 503 && busy.body == "busy"
      - click: {role: button, name: Reload}
      - waitForResponse: {url: "/api/orders*", status: 200, saveAs: listed}
      - assert: len(listed.body.orders) > 0 && listed.headers["content-type"] == "application/json"
      - assertText: {role: status, name: Orders state, matches: "^[0-9]+ orders$"}
      - expectRequest: {url: "/api/orders*", method: GET, count: 2}
      - expectRequest: {url: "**/analytics/**", not: true}
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := runSteps(t, base, tt.steps)
			if x.Status != duet.StatusPassed {
				t.Fatalf("got %s", describe(x))
			}
		})
	}
}

// TestRouteFailures: what the network kinds fail with.
func TestRouteFailures(t *testing.T) {
	t.Parallel()
	base := sampletest.Shop(t)
	x := runSteps(t, base, `      - open: /lab/live
      - waitForResponse: {url: "/api/orders*", status: 201}
        timeout: 2s
`)
	if r := x.Results[1]; r.ErrorCode != duet.CodeStepTimeout || !strings.Contains(r.ErrorMessage, "no response matched") || !strings.Contains(r.ErrorMessage, "seen with another status") {
		t.Errorf("waitForResponse of a status that never comes: got %s", describe(x))
	}
	x = runSteps(t, base, `      - open: /lab/live
      - expectRequest: {url: "/api/orders*", count: 3}
        timeout: 1s
`)
	if r := x.Results[1]; r.ErrorCode != duet.CodeAssertionFailed || !strings.Contains(r.ErrorMessage, "1 requests matched /api/orders* GET, want 3") && !strings.Contains(r.ErrorMessage, "want 3") {
		t.Errorf("expectRequest of a count not reached: got %s", describe(x))
	}
}

// TestRouteCompile: the route, waitForResponse and expectRequest keys are
// checked when the suite compiles, with line:col; a route's file is read
// from the suite's folder then.
func TestRouteCompile(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h}\ncases:\n  - title: c\n    steps:\n"
	files := fstest.MapFS{"data/orders.json": {Data: []byte(`{"orders": [{"id": "Z9", "status": "paid"}]}`)}, "big.bin": {Data: make([]byte, 2<<20)}}
	for src, want := range map[string]string{
		"      - route: {url: /api/x}\n":                                           "route needs what to do",
		"      - route: {json: []}\n":                                              "route needs exactly one of url, urlMatches",
		"      - route: {url: /a, urlMatches: b, json: []}\n":                      "route needs exactly one of url, urlMatches",
		"      - route: {url: \"/a{b\", json: []}\n":                               "a { without its }",
		"      - route: {urlMatches: \"(\", json: []}\n":                           "invalid regular expression",
		"      - route: {url: /a, json: [], body: x}\n":                            "use one of json, body, file",
		"      - route: {url: /a, abort: nope}\n":                                  "abort must be one of failed",
		"      - route: {url: /a, abort: failed, status: 500}\n":                   "status does not go with abort",
		"      - route: {url: /a, setHeaders: {Host: evil}}\n":                     "cannot change Host",
		"      - route: {url: /a, setHeaders: {X-A: b}, body: x}\n":                "body does not go with setHeaders",
		"      - route: {url: /a, delay: 1m}\n":                                    "timeout must be between 1ms and 10s",
		"      - route: {url: /a, file: nope.json}\n":                              "file: cannot read nope.json",
		"      - route: {url: /a, file: ../x.json}\n":                              "must be a path inside the suite's folder",
		"      - route: {url: /a, file: big.bin}\n":                                "more than the 1048576 of a route",
		"      - route: {url: /a, status: 42}\n":                                   "status must be a whole number from 100 to 999",
		"      - route: {url: /a, headers: {X-A: b}}\n":                            "headers and contentType are of a response",
		"      - route: {url: /a, json: [], nope: 1}\n":                            `unknown key "nope"`,
		"      - open: /\n      - waitForResponse: {url: /a, saveAs: 1x}\n":        "saveAs must be a variable name",
		"      - waitForResponse: /a\n":                                            "waitForResponse needs a page",
		"      - open: /\n      - expectRequest: {url: /a, count: 1, not: true}\n": "not goes without count",
		"      - open: /\n      - expectRequest: {url: /a, method: \"G T\"}\n":     "is not an HTTP method",
	} {
		_, err := compiler.CompileSuite(t.Context(), []byte(head+src), "t.yaml", compiler.Options{Files: files})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "t.yaml:5:") && !strings.Contains(err.Error(), "t.yaml:6:") {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
	s, err := compiler.CompileSuite(t.Context(), []byte(head+"      - route: {url: /api/orders, file: data/orders.json}\n"), "t.yaml", compiler.Options{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Cases[0].Steps[0].Browser.Route
	if s.Cases[0].Steps[0].Name != "route /api/orders" || r.ContentType != "application/json" || !strings.Contains(string(r.FileData), "Z9") {
		t.Errorf("got %+v (%q)", r, s.Cases[0].Steps[0].Name)
	}
	if _, err := compiler.CompileSuite(t.Context(), []byte(head+"      - route: {url: /a, file: x.json}\n"), "t.yaml", compiler.Options{}); err == nil || !strings.Contains(err.Error(), "which this suite has not") {
		t.Errorf("a file without a folder: %v", err)
	}
}

// TestGlobRegexp: what a URL glob matches.
func TestGlobRegexp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		glob, url string
		want      bool
	}{
		{"**/api/orders", "http://h:1/api/orders", true},
		{"**/api/orders", "http://h:1/api/orders?limit=1", false},
		{"/api/orders*", "http://h:1/api/orders?limit=1", true},
		{"/api/orders*", "http://h:1/api/orders/A1", false},
		{"/api/**", "https://x.example/api/orders/A1", true},
		{"/api/**", "https://x.example/v2/api/orders", false},
		{"**/*.{png,jpg}", "http://h/img/a.jpg", true},
		{"**/*.{png,jpg}", "http://h/img/a.gif", false},
		{"http://h/a.b", "http://h/aXb", false},
	} {
		re, err := step.GlobRegexp(tt.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := re.MatchString(tt.url); got != tt.want {
			t.Errorf("%s ~ %s: got %v (%s)", tt.glob, tt.url, got, re)
		}
	}
}

// TestRouteUnderTheGuard: with the network guard on, routes still mock
// the requests of an allowed page (its API, and a page of its own host),
// but a route never answers a navigation the guard refuses: the guard
// judges documents first, so a mocked page at a refused host stays
// refused.
func TestRouteUnderTheGuard(t *testing.T) {
	t.Parallel()
	pool(t)
	guarded := browser.NewPool(browser.Options{MaxBrowsers: 1, Guard: &netguard.Policy{}})
	t.Cleanup(guarded.Close)
	opts := engine.Options{Browser: app.NewBrowser(guarded)}
	base := sampletest.Shop(t)
	x := runStepsWith(t, base, `      - route: {url: "/api/orders*", json: {orders: []}}
      - route: {url: /lab/mocked, body: "<title>Mocked</title><p id=m>mocked page</p>", contentType: text/html}
      - open: /lab/live
      - assertText: {role: status, name: Orders state, equals: No orders yet.}
      - open: /lab/mocked
      - assertText: {selector: "#m", equals: mocked page}
`, opts)
	if x.Status != duet.StatusPassed {
		t.Fatalf("routes of an allowed page: got %s", describe(x))
	}
	// open checks its URL itself; a link the page follows is judged in
	// the Fetch handler, where routes are too.
	x = runStepsWith(t, base, `      - route: {url: "http://127.0.0.2:9/**", body: "<title>Mocked</title><p id=m>mocked</p>", contentType: text/html}
      - route: {url: /lab/go, body: "<title>Go</title><a id=go href='http://127.0.0.2:9/'>go</a>", contentType: text/html}
      - open: /lab/go
      - click: "#go"
      - assertText: {selector: "#m", equals: mocked}
        timeout: 3s
`, opts)
	// The refusal fails the step that sees it: the click, when it is still
	// waiting after itself as the page navigates, or the assertion after it.
	var failed *duet.StepResult
	for _, r := range x.Results {
		if r.ErrorCode != "" {
			failed = r
			break
		}
	}
	if x.Status == duet.StatusPassed || failed == nil || failed.ErrorCode != duet.CodeURLRefused || !strings.Contains(failed.ErrorMessage, "127.0.0.2") {
		t.Fatalf("a mocked page at a refused host: got %s, want URL_REFUSED", describe(x))
	}
}
