package step_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/duet-test/duet"
)

// TestPopupFirstRequestsExpected: expectRequest counts a popup's document
// and the API call its script makes as it loads once each, and
// waitForResponse saves that call's response — for a popup that a link
// with target=_blank rel=noopener opens (its first call may leave before
// its renderer reports requests), with the server's answer and with a
// route's. (The popup's first requests were in no log: expectRequest
// found none and waitForResponse timed out.)
func TestPopupFirstRequestsExpected(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>Opener</title><a href="/popup" target="_blank" rel="noopener">Open the popup</a>`)
		case "/popup":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><title>Popup</title><p role="status" aria-label="First">waiting</p>
<script>fetch('/api/first').then(r => r.json()).then(j => { document.querySelector('p').textContent = j.from })</script>`)
		case "/api/first":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"from": "the server"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	for _, tt := range []struct{ name, route, from string }{
		{"the server", "", "the server"},
		{"a route", `      - route: {url: /api/first, json: {from: the route}}
`, "the route"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := runSteps(t, srv.URL, tt.route+`      - open: /
      - click: {role: link, name: Open the popup}
      - waitForPopup:
      - assertText: {role: status, name: First, equals: `+tt.from+`}
      - expectRequest: {url: /popup, method: GET, count: 1}
        soft: true
      - expectRequest: {url: /api/first, method: GET, count: 1}
        soft: true
      - waitForResponse: {url: /api/first, saveAs: call}
      - assert: call.status == 200 && call.body.from == "`+tt.from+`"
`)
			if x.Status != duet.StatusPassed {
				t.Fatalf("got %s", describe(x))
			}
		})
	}
}
