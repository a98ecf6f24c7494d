// Package apptest starts a real Duet for the tests of the REST API and
// the console: the SQLite store, the catalog, the MCP client, the REST API
// and the console behind an httptest server, beside the sample order MCP
// server, with a personal token for alice, bob and root (an
// administrator).
package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/sample"
)

// Env is a running Duet.
type Env struct {
	T          testing.TB
	App        *app.App
	URL        string // http://127.0.0.1:PORT
	OrderURL   string // the sample order MCP server
	OrderToken string // its bearer token
	Tokens     map[string]string
}

// New starts a Duet with the DUET_* variables vars (over the defaults:
// a temporary DUET_HOME, loopback MCP servers allowed, DUET_ADMINS=root).
func New(t testing.TB, vars map[string]string) *Env {
	return start(t, vars, false)
}

// Serve is New with the app served as `duet serve` serves it (app.Serve:
// its HTTP server, run workers and maintenance) on a loopback port.
func Serve(t testing.TB, vars map[string]string) *Env {
	return start(t, vars, true)
}

func start(t testing.TB, vars map[string]string, serve bool) *Env {
	t.Helper()
	all := map[string]string{"DUET_HOME": t.TempDir(), "DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "error", "DUET_ADMINS": "root"}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := config.Load(func(k string) string { return all[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: os.Stderr, Getenv: func(k string) string { return all[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	e := &Env{T: t, App: a, Tokens: map[string]string{}}
	e.OrderToken, _ = auth.NewToken()
	url, stop, err := sample.StartOrderServer(context.Background(), "127.0.0.1:0", sample.NewOrders(), e.OrderToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e.OrderURL = url
	if serve {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Serve(ctx, ln, app.ServeOptions{}) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		e.URL = "http://" + ln.Addr().String()
	} else {
		srv := httptest.NewServer(a.Handler(app.ServeOptions{}))
		t.Cleanup(srv.Close)
		e.URL = srv.URL
	}
	for _, u := range []string{"alice", "bob", "root"} {
		plain, hash := auth.NewToken()
		if err := a.Store.CreateToken(t.Context(), &duet.Token{UserID: u, Name: "test", Hash: hash}); err != nil {
			t.Fatal(err)
		}
		e.Tokens[u] = plain
	}
	return e
}

// Call sends a request as user (a personal token; "" for none) with hdr
// as header name, value pairs, and returns the status, the body and the
// response.
func (e *Env) Call(user, method, path string, body any, hdr ...string) (int, []byte, *http.Response) {
	e.T.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.T.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(e.T.Context(), method, e.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+e.Tokens[user])
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp
}

// ErrCode returns the code of a REST error body ("" for none).
func ErrCode(b []byte) duet.Code {
	var e struct {
		Error struct {
			Code duet.Code `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	return e.Error.Code
}

// Suite is the YAML of a task named name whose one case needs no browser;
// its description carries markup that must come back as text.
func Suite(name string) string {
	return "task:\n  name: " + name + "\n  description: '<script>document.title=\"pwned\"</script> the plain task'\n  baseURL: http://127.0.0.1:9\n" +
		"cases:\n  - key: sums\n    title: sums add up\n    steps:\n      - set: {x: '1 + 1'}\n      - assert: x == 2\n"
}

// RegisterOrders registers the sample order server as user's "orders", with
// its token, and archives its catalog.
func (e *Env) RegisterOrders(user string) {
	e.T.Helper()
	if _, err := e.App.MCPClient.Register(e.T.Context(), mcpclient.Registration{Owner: user, Name: "orders", URL: e.OrderURL,
		Headers: map[string]string{"Authorization": "Bearer " + e.OrderToken}}); err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.App.MCPClient.Sync(e.T.Context(), user, "orders"); err != nil {
		e.T.Fatal(err)
	}
}

// OrdersSuite is the YAML of a task named name, with base URL base, shared
// with sharedWith, whose one case calls the read-only list_orders of the
// order server (as registered by RegisterOrders) and posts what it got to
// collect: a case that needs the approval of anyone else who runs it.
func OrdersSuite(name, base, sharedWith, collect string) string {
	return "task:\n  name: " + name + "\n  baseURL: " + base + "\n  sharedWith: [" + sharedWith + "]\n" +
		"cases:\n  - key: digest\n    title: post the order digest\n    steps:\n" +
		"      - mcpCall: {server: orders, tool: list_orders, input: {limit: 5}, saveAs: orders}\n" +
		"      - http: {method: POST, url: \"" + collect + "\", json: {digest: \"${orders.text}\"}}\n"
}

// SignIn signs user in to the console with their token and returns a
// client that carries the session cookie (redirects are not followed) and
// the session's CSRF token, read from a page.
func (e *Env) SignIn(user string) (*http.Client, string) {
	e.T.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.URL + "/signin")
	if err != nil {
		e.T.Fatal(err)
	}
	form, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfRe.FindSubmatch(form)
	if m == nil {
		e.T.Fatalf("no CSRF token on the sign-in page (%d): %s", resp.StatusCode, form)
	}
	resp, err = c.PostForm(e.URL+"/signin", url.Values{"token": {e.Tokens[user]}, "next": {"/tokens"}, "csrf": {string(m[1])}})
	if err != nil {
		e.T.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		e.T.Fatalf("sign-in as %s: %d", user, resp.StatusCode)
	}
	resp, err = c.Get(e.URL + "/tokens")
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m = csrfRe.FindSubmatch(b)
	if m == nil {
		e.T.Fatalf("no CSRF token on the tokens page (%d): %s", resp.StatusCode, b)
	}
	return c, string(m[1])
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// CallRaw sends body as it is (JSON) as user.
func (e *Env) CallRaw(user, method, path, body string) (int, []byte, *http.Response) {
	e.T.Helper()
	req, err := http.NewRequestWithContext(e.T.Context(), method, e.URL+path, strings.NewReader(body))
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.Tokens[user])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp
}

// HeldExecution queues a run of the task's case caseID as owner and claims
// it as a worker would, returning the worker's lease and the started
// execution's id: what a write of a run's evidence (a baseline) is fenced
// by.
func (e *Env) HeldExecution(owner, taskID, caseID string) (duet.Lease, string) {
	e.T.Helper()
	ctx := context.Background()
	c, err := e.App.Store.FindCaseByID(ctx, owner, caseID)
	if err != nil {
		e.T.Fatal(err)
	}
	run := &duet.Run{TaskID: taskID, TriggeredBy: owner, CallSource: duet.SourceCLI}
	x := &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps}
	if _, _, err := e.App.Store.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
		e.T.Fatal(err)
	}
	claimed, err := e.App.Store.ClaimRunByID(ctx, run.ID, "apptest", time.Hour)
	if err != nil || claimed == nil {
		e.T.Fatalf("claiming run %s: %v %v", run.ID, claimed, err)
	}
	l := duet.LeaseOf(claimed, "apptest")
	if err := e.App.Store.StartExecution(ctx, l, x); err != nil {
		e.T.Fatal(err)
	}
	return l, x.ID
}
