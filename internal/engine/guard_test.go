package engine_test

import (
	"net"
	"strings"
	"testing"

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
	w, _, _ := worker(t, db, engine.Options{HTTPClient: netguard.Policy{}.Client()}, engine.WorkerOptions{})
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
