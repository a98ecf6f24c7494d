package engine_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/netguard"
)

// TestHTTPStepGuard: with the guarded client the app injects, an http step
// reaches its task's base URL host and nothing the guard refuses; a refusal
// is URL_REFUSED, not HTTP_REQUEST_FAILED.
func TestHTTPStepGuard(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	other := api(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := apply(t, db, "alice", `
task: {name: guarded, baseURL: `+srv.URL+`}
cases:
  - key: a-base
    title: the base URL host
    steps:
      - http: {url: /orders/A1, saveAs: o}
      - assert: o.body.status == "paid"
  - key: b-zero
    title: 0.0.0.0
    steps:
      - http: GET http://0.0.0.0:`+port+`/orders/A1
  - key: c-mapped
    title: IPv4-mapped loopback
    steps:
      - http: GET http://[::ffff:127.0.0.1]:`+port+`/orders/A1
  - key: d-other
    title: another loopback service
    steps:
      - http: GET `+other.URL+`/orders/A1
`)
	w, _, _ := worker(t, db, engine.Options{HTTPClient: func(a netguard.Allowance) *http.Client { return netguard.Policy{}.Allowing(a).Client() }}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	waitFinal(t, db, run.ID)
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	for _, x := range execs {
		want := duet.CodeURLRefused
		if x.CaseKey == "a-base" {
			want = ""
		}
		if x.ErrorCode != want {
			t.Errorf("case %s: got %s %s %q, want code %q", x.CaseKey, x.Status, x.ErrorCode, x.ErrorMessage, want)
		}
		if want != "" && !strings.Contains(x.ErrorMessage, "GET http") {
			t.Errorf("case %s: message %q, want it to name the request", x.CaseKey, x.ErrorMessage)
		}
	}
}

// TestHTTPStepAllowanceIsTheCases: the allowance of a case's http steps is
// given to the client the engine makes for the case (Options.HTTPClient),
// not read from a request's context: the case reaches its own task's base
// URL host, and not another loopback service, on a plain policy; and the
// case's connections end with it.
func TestHTTPStepAllowanceIsTheCases(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	closed := make(chan struct{}, 16)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	mine := httptest.NewUnstartedServer(mux)
	mine.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	mine.Start()
	t.Cleanup(mine.Close)
	theirs := api(t)
	res := apply(t, db, "alice", `
task: {name: allowance, baseURL: `+mine.URL+`}
cases:
  - key: a-own
    title: its own base URL host
    steps:
      - http: {url: /ok, saveAs: o}
      - assert: o.body.ok == true
  - key: b-other
    title: another loopback service
    steps:
      - http: GET `+theirs.URL+`/orders/A1
`)
	var mu sync.Mutex
	var made []string
	w, _, _ := worker(t, db, engine.Options{HTTPClient: func(a netguard.Allowance) *http.Client {
		mu.Lock()
		made = append(made, a.String())
		mu.Unlock()
		return netguard.Policy{}.Allowing(a).Client()
	}}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	waitFinal(t, db, run.ID)
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	for _, x := range execs {
		want := map[string]duet.Code{"a-own": "", "b-other": duet.CodeURLRefused}[x.CaseKey]
		if x.ErrorCode != want {
			t.Errorf("case %s: got %s %s %q, want code %q", x.CaseKey, x.Status, x.ErrorCode, x.ErrorMessage, want)
		}
	}
	host := strings.TrimPrefix(mine.URL, "http://")
	mu.Lock()
	if len(made) != 2 || made[0] != host || made[1] != host {
		t.Errorf("clients made for the cases with allowances %q, want one per case allowing %s", made, host)
	}
	mu.Unlock()
	// The server keeps its connections open; the case's client closes
	// its own when the case ends.
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Error("the connection of the case's http step outlived the case")
	}
}
