package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/sample"
)

// env is a real Duet (SQLite store, catalog, MCP client, REST API and
// console) behind an httptest server, beside the sample order MCP server.
type env struct {
	t          *testing.T
	a          *app.App
	srv        *httptest.Server
	orderURL   string
	orderToken string
	tokens     map[string]string
}

func newEnv(t *testing.T, vars map[string]string) *env {
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
	e := &env{t: t, a: a, tokens: map[string]string{}}
	e.orderToken, _ = auth.NewToken()
	url, stop, err := sample.StartOrderServer(context.Background(), "127.0.0.1:0", sample.NewOrders(), e.orderToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	e.orderURL = url
	e.srv = httptest.NewServer(a.Handler(app.ServeOptions{}))
	t.Cleanup(e.srv.Close)
	for _, u := range []string{"alice", "bob", "root"} {
		plain, hash := auth.NewToken()
		if err := a.Store.CreateToken(t.Context(), &duet.Token{UserID: u, Name: "test", Hash: hash}); err != nil {
			t.Fatal(err)
		}
		e.tokens[u] = plain
	}
	return e
}

// call sends a REST request as user (a personal token) and returns the
// status, the body and the response.
func (e *env) call(user, method, path string, body any, hdr ...string) (int, []byte, *http.Response) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+e.tokens[user])
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp
}

// errCode returns the code of a REST error body ("" for none).
func errCode(b []byte) duet.Code {
	var e struct {
		Error struct {
			Code duet.Code `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	return e.Error.Code
}

// suite is a task whose case needs no browser; its name and description
// carry markup that must come back as text.
const xssName = `<img src=x onerror="document.title='pwned'">`

func suite(name string) string {
	return "task:\n  name: " + name + "\n  description: '<script>document.title=\"pwned\"</script> the plain task'\n  baseURL: http://127.0.0.1:9\n" +
		"cases:\n  - key: sums\n    title: sums add up\n    steps:\n      - set: {x: '1 + 1'}\n      - assert: x == 2\n"
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}
