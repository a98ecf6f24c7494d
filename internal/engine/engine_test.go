package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sqlite"
)

func openStore(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "duet.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// api is a small JSON API to test http steps against.
func api(t *testing.T) *httptest.Server {
	var slow atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "A1" {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=sekrit")
		fmt.Fprint(w, `{"id":"A1","status":"paid","total":12.5,"access_token":"tok-123"}`)
	})
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		var v any
		json.NewDecoder(r.Body).Decode(&v)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"got": v, "auth": r.Header.Get("X-Test")})
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		slow.Add(1)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func apply(t *testing.T, db *sqlite.DB, owner, yaml string) *duet.ApplyResult {
	t.Helper()
	s, err := compiler.CompileSuite(t.Context(), []byte(yaml), "t.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplySuite(t.Context(), owner, s)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func startRun(t *testing.T, db *sqlite.DB, task *duet.Task, user string) *duet.Run {
	t.Helper()
	cases, _, _, err := db.FindCases(t.Context(), duet.CaseFilter{TaskID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: task.ID, TriggeredBy: user, CallSource: duet.SourceCLI}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps, TimeoutMs: c.TimeoutMs, Retries: c.Retries})
	}
	if _, _, err := db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	return run
}

func waitFinal(t *testing.T, db *sqlite.DB, id string) *duet.Run {
	t.Helper()
	// A budget a loaded machine meets under -race, not a claim of speed:
	// the wait ends when the run is final.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		r, err := db.FindRunByID(t.Context(), "", id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Final() {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s did not finish", id)
	return nil
}

func worker(t *testing.T, db *sqlite.DB, opts engine.Options, wopts engine.WorkerOptions) (*engine.Worker, context.CancelFunc, chan struct{}) {
	t.Helper()
	e := engine.New(db, opts)
	if wopts.PollInterval == 0 {
		wopts.PollInterval = 20 * time.Millisecond
	}
	w := engine.NewWorker(db, e, wopts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w, cancel, done
}

func TestRunPassesAndFails(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	res := apply(t, db, "alice", `
task: {name: api, baseURL: `+srv.URL+`}
cases:
  - key: a-pass
    title: order is paid
    steps:
      - http: {url: /orders/A1, saveAs: order}
      - assert: order.status == 200 && order.body.status == "paid"
      - set: {half: "order.body.total / 2"}
      - http:
          method: POST
          url: /echo
          headers: {X-Test: "id-${order.body.id}"}
          json: {id: "${order.body.id}", half: "${half}"}
          saveAs: echo
      - assert: echo.body.got.id == "A1" && echo.body.got.half == 6.25 && echo.body.auth == "id-A1"
  - key: b-fail
    title: order is shipped
    steps:
      - http: GET /orders/A1
      - http: {url: /orders/A1, saveAs: order}
      - assert: {expr: order.body.status == "shipped", message: the order shipped}
      - assert: "true"
  - key: c-mcp
    title: mcp without a registry
    steps:
      - mcpCall: {serverKey: mcp_orders_0badcafe, tool: query_order, input: {orderId: A1}, failurePolicy: optional}
      - mcpCall: {serverKey: mcp_orders_0badcafe, tool: query_order, input: {orderId: A1}}
`)
	w, _, _ := worker(t, db, engine.Options{}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusFailed || final.Totals.Passed != 1 || final.Totals.Failed != 2 {
		t.Fatalf("run: got %s %+v %s", final.Status, final.Totals, final.ErrorMessage)
	}
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	pass, fail, mcp := execs[0], execs[1], execs[2]
	if pass.Status != duet.StatusPassed || len(pass.Results) != 5 {
		t.Fatalf("passing case: %+v", pass)
	}
	// Secrets in saved variables are redacted.
	out := string(pass.Results[0].Output)
	if strings.Contains(out, "tok-123") || strings.Contains(out, "sekrit") || !strings.Contains(out, `"paid"`) {
		t.Fatalf("saved output not redacted: %s", out)
	}
	if v, _ := json.Marshal(pass.Vars); strings.Contains(string(v), "tok-123") {
		t.Fatalf("variables not redacted: %s", v)
	}
	if fail.Status != duet.StatusFailed || fail.ErrorCode != duet.CodeAssertionFailed || !strings.Contains(fail.ErrorMessage, "the order shipped") {
		t.Fatalf("failing case: %s %s %s", fail.Status, fail.ErrorCode, fail.ErrorMessage)
	}
	if got := fail.Results[3].Status; got != duet.StatusSkipped {
		t.Fatalf("step after the failure: got %s, want skipped", got)
	}
	if r := mcp.Results[0]; r.ErrorCode != duet.CodeMCPServerNotConfigured || !r.Optional {
		t.Fatalf("optional mcpCall: got %+v", r)
	}
	if mcp.Status != duet.StatusFailed || mcp.ErrorCode != duet.CodeMCPServerNotConfigured {
		t.Fatalf("required mcpCall: got %s %s", mcp.Status, mcp.ErrorCode)
	}
}

func TestStepTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	res := apply(t, db, "alice", `
task: {name: slow, baseURL: `+srv.URL+`}
cases:
  - title: slow step
    steps:
      - http: GET /slow
        timeout: 200ms
`)
	w, _, _ := worker(t, db, engine.Options{}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final := waitFinal(t, db, run.ID)
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	if final.Status != duet.StatusFailed || execs[0].Results[0].ErrorCode != duet.CodeStepTimeout {
		t.Fatalf("got %s %+v", final.Status, execs[0].Results[0])
	}

	res2 := apply(t, db, "alice", `
task: {name: slow2, baseURL: `+srv.URL+`}
cases:
  - title: slow step
    steps:
      - http: GET /slow
        timeout: 1m
`)
	run2 := startRun(t, db, res2.Task, "alice")
	w.Notify()
	for {
		r, _ := db.FindRunByID(t.Context(), "", run2.ID)
		if r.Status == duet.StatusRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if _, err := db.RequestCancel(t.Context(), "alice", run2.ID); err != nil {
		t.Fatal(err)
	}
	final = waitFinal(t, db, run2.ID)
	if final.Status != duet.StatusCancelled {
		t.Fatalf("cancelled run: got %s", final.Status)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancellation took %s", d)
	}
}

func TestShutdownResumes(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	res := apply(t, db, "alice", `
task: {name: resume, baseURL: `+srv.URL+`}
cases:
  - key: a
    title: quick
    steps:
      - http: {url: /orders/A1, saveAs: o}
      - assert: o.status == 200
  - key: b
    title: slow
    steps:
      - http: GET /slow
        timeout: 1m
`)
	_, stop, done := worker(t, db, engine.Options{}, engine.WorkerOptions{ShutdownGrace: 100 * time.Millisecond})
	run := startRun(t, db, res.Task, "alice")
	for {
		execs, _ := db.FindExecutions(t.Context(), run.ID)
		if execs[1].Status == duet.StatusRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop() // SIGTERM
	<-done
	r, _ := db.FindRunByID(t.Context(), "", run.ID)
	if r.Status != duet.StatusQueued || r.Totals.Passed != 1 {
		t.Fatalf("after shutdown: got %s %+v, want queued with the finished case kept", r.Status, r.Totals)
	}
	// The next worker resumes: the finished case is kept, the interrupted
	// one runs again (and times out quickly this time via the case limit).
	worker(t, db, engine.Options{CaseTimeout: 300 * time.Millisecond}, engine.WorkerOptions{})
	final := waitFinal(t, db, run.ID)
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	if final.Attempt != 2 || execs[0].Status != duet.StatusPassed || execs[1].ErrorCode != duet.CodeCaseTimeout {
		t.Fatalf("resumed: attempt %d, %s, %s %s", final.Attempt, execs[0].Status, execs[1].Status, execs[1].ErrorCode)
	}
}

func TestCrashedWorkerLeaseExpires(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	res := apply(t, db, "alice", `
task: {name: crash, baseURL: `+srv.URL+`}
cases:
  - title: quick
    steps:
      - http: {url: /orders/A1, saveAs: o}
      - assert: o.status == 200
`)
	run := startRun(t, db, res.Task, "alice")
	// A worker claims it and "crashes" (never renews).
	if c, err := db.ClaimRun(t.Context(), "dead", 100*time.Millisecond); err != nil || c == nil {
		t.Fatalf("claim: %v", err)
	}
	worker(t, db, engine.Options{}, engine.WorkerOptions{})
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusPassed || final.Attempt != 2 {
		t.Fatalf("got %s attempt %d", final.Status, final.Attempt)
	}
}

func TestAbandonedRunEndsInError(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	res := apply(t, db, "alice", `
task: {name: abandon, baseURL: `+srv.URL+`}
cases:
  - title: quick
    steps:
      - assert: "true"
`)
	run := startRun(t, db, res.Task, "alice")
	for range 2 {
		if c, err := db.ClaimRun(t.Context(), "dead", -time.Second); err != nil || c == nil {
			t.Fatalf("claim: %v", err)
		}
	}
	worker(t, db, engine.Options{}, engine.WorkerOptions{MaxAttempts: 2})
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusError || final.ErrorCode != duet.CodeInterrupted {
		t.Fatalf("got %s %s", final.Status, final.ErrorCode)
	}
}
