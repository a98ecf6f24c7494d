package e2e

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var consoleRe = regexp.MustCompile(`console=(http://127\.0\.0\.1:\d+/)`)

// TestServePrintsTheConsole: `duet serve` prints the console's URL; it
// answers with the sign-in page (no inline script allowed), and the REST
// API's OpenAPI document is served beside it.
func TestServePrintsTheConsole(t *testing.T) {
	t.Parallel()
	s := serve(t, t.TempDir(), nil)
	m := consoleRe.FindStringSubmatch(s.Stderr())
	if m == nil {
		t.Fatalf("serve did not print the console URL: %s", s.Stderr())
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/signin" || !strings.Contains(string(body), "Personal access token") {
		t.Fatalf("GET %s: %d at %s", m[1], resp.StatusCode, resp.Request.URL)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
	resp, err = http.Get(m[1] + "api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"openapi": "3.1.0"`) {
		t.Fatalf("openapi.json: %d %.200s", resp.StatusCode, body)
	}
}
