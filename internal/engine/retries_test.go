package engine_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// flakyAPI answers 503 to the first request of each key (/flaky/{key}) and
// 200 after: deterministic, no randomness.
func flakyAPI(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	seen := map[string]int{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /flaky/{key}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.PathValue("key")]++
		n := seen[r.PathValue("key")]
		mu.Unlock()
		if n == 1 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestRetriesAndFlaky: a case that fails and then passes on a retry is
// flaky — its failed attempt kept whole with its results, the run passed
// with the flaky case counted apart; a case that fails every attempt
// runs 1+retries times and fails, each attempt kept; a case without
// retries runs once; and the afterEach hook runs in every attempt.
func TestRetriesAndFlaky(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := flakyAPI(t)
	res := apply(t, db, "alice", `
task: {name: retries, baseURL: `+srv.URL+`, retries: 2}
cases:
  - key: a-flaky
    title: flaky then fine
    steps:
      - http: {url: "/flaky/a-${run.id}", saveAs: r}
      - assert: {expr: r.status == 200, message: the service answered}
    afterEach:
      - set: {cleaned: "true"}
  - key: b-broken
    title: always broken
    retries: 1
    steps:
      - assert: {expr: "1 == 2", message: never}
  - key: c-once
    title: no retries
    retries: 0
    steps:
      - http: {url: "/flaky/c-${run.id}", saveAs: r}
      - assert: r.status == 200
`)
	w, _, _ := worker(t, db, engine.Options{}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusFailed || final.Totals.Flaky != 1 || final.Totals.Failed != 2 || final.Totals.Passed != 0 {
		t.Fatalf("run: %s %+v %s", final.Status, final.Totals, final.ErrorMessage)
	}
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	flaky, broken, once := execs[0], execs[1], execs[2]
	if flaky.Status != duet.StatusFlaky || flaky.Attempt != 2 || len(flaky.Attempts) != 1 || len(flaky.Results) != 3 {
		t.Fatalf("flaky case: status %s attempt %d attempts %d results %d", flaky.Status, flaky.Attempt, len(flaky.Attempts), len(flaky.Results))
	}
	a := flaky.Attempts[0]
	if a.Attempt != 1 || a.Status != duet.StatusFailed || !strings.Contains(a.ErrorMessage, "the service answered") || len(a.Results) != 3 ||
		a.Results[1].Status != duet.StatusFailed || a.Results[2].Status != duet.StatusPassed || a.Results[2].Hook != duet.HookAfterEach {
		t.Fatalf("flaky case's first attempt: %+v", a)
	}
	if broken.Status != duet.StatusFailed || broken.Attempt != 2 || len(broken.Attempts) != 1 || broken.Attempts[0].Status != duet.StatusFailed {
		t.Fatalf("broken case: status %s attempt %d attempts %d", broken.Status, broken.Attempt, len(broken.Attempts))
	}
	if once.Status != duet.StatusFailed || once.Attempt != 1 || len(once.Attempts) != 0 {
		t.Fatalf("case without retries: status %s attempt %d attempts %d", once.Status, once.Attempt, len(once.Attempts))
	}
}

// TestFlakyRunPasses: a run whose only non-passing case is flaky passes.
func TestFlakyRunPasses(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := flakyAPI(t)
	res := apply(t, db, "alice", `
task: {name: flaky, baseURL: `+srv.URL+`}
cases:
  - key: a
    title: flaky
    retries: 1
    steps:
      - http: {url: "/flaky/${run.id}", saveAs: r}
      - assert: r.status == 200
  - {key: b, title: fine, steps: [{assert: "true"}]}
`)
	w, _, _ := worker(t, db, engine.Options{}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusPassed || final.Totals.Flaky != 1 || final.Totals.Passed != 1 {
		t.Fatalf("run: %s %+v %s", final.Status, final.Totals, final.ErrorMessage)
	}
}
