package engine_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// TestShutdownStartsNothing: on SIGTERM (the worker's context ends) the
// worker starts no case and claims no run any more. Of the cases in
// flight, one that can resume exactly at its next step stops after its
// current step and is handed back there; one that cannot (a secret in its
// variables) goes on to its end within the grace period. The next worker
// resumes the run: the suspended case at its next step — no step that was
// recorded runs again — and the cases that never started.
func TestShutdownStartsNothing(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	sys := newSUT(t)
	res := apply(t, db, "alice", `
task: {name: drain, baseURL: `+sys.URL+`}
cases:
  - key: a-resumable
    title: resumable
    steps:
      - set: {n: "40 + 2"}
      - http: /block/a
        timeout: 1m
      - http: /a2
      - assert: n == 42
  - key: b-secret
    title: holds a secret
    steps:
      - http: {url: /b1, saveAs: token}
      - http: /block/b
        timeout: 1m
      - http: /b3
  - key: c-later
    title: later
    steps: [{http: /c}]
  - key: d-later
    title: later too
    steps: [{http: /d}]
`)
	logs := &syncLog{}
	w := engine.NewWorker(db, engine.New(db, engine.Options{Parallel: 2}), engine.WorkerOptions{
		ShutdownGrace: 5 * time.Minute, PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, sigterm := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { sigterm(); <-done })
	run := startRun(t, db, res.Task, "alice")
	<-sys.reached
	<-sys.reached // both cases in flight, each in a step
	sigterm()
	other := startRun(t, db, res.Task, "alice") // queued after the signal: not claimed
	close(sys.release)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker did not stop (its grace period is 5 minutes; the cases in flight end at once):\n%s", logs)
	}
	for _, p := range []string{"/c", "/d"} {
		if n := sys.count(p); n != 0 {
			t.Fatalf("a case started after SIGTERM (%d requests to %s)", n, p)
		}
	}
	if a2, b3 := sys.count("/a2"), sys.count("/b3"); a2 != 0 || b3 != 1 {
		t.Fatalf("after SIGTERM: /a2 %d (want 0: the resumable case stops after its step), /b3 %d (want 1: the other goes on to its end)", a2, b3)
	}
	r, _ := db.FindRunByID(t.Context(), "", run.ID)
	o, _ := db.FindRunByID(t.Context(), "", other.ID)
	// (A claim in flight as the signal came is given back at once: the
	// later run is queued with none of its cases started.)
	if r.Status != duet.StatusQueued || r.Totals.Passed != 1 || o.Status != duet.StatusQueued || o.Totals.Pending != 4 {
		t.Fatalf("after SIGTERM: run %s %+v, the later run %s %+v; want both queued, the finished case kept, none of the later run's started", r.Status, r.Totals, o.Status, o.Totals)
	}
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	if execs[0].ResumeFrom != 2 || len(execs[0].Results) != 2 {
		t.Fatalf("the resumable case: resume at %d with %d results, want 2 with 2", execs[0].ResumeFrom, len(execs[0].Results))
	}

	worker(t, db, engine.Options{Parallel: 2}, engine.WorkerOptions{})
	for _, id := range []string{run.ID, other.ID} {
		if final := waitFinal(t, db, id); final.Status != duet.StatusPassed {
			t.Fatalf("run %s resumed: %s %s", id, final.Status, final.ErrorMessage)
		}
	}
	execs, _ = db.FindExecutions(t.Context(), run.ID)
	for _, x := range execs {
		if x.Status != duet.StatusPassed || len(x.Results) != len(x.Steps) {
			t.Fatalf("%s: %s with %d of %d results", x.CaseKey, x.Status, len(x.Results), len(x.Steps))
		}
	}
	// The run's own requests (the later run's are counted apart: the
	// second run requests the same paths once more).
	want := map[string]int{"/block/a": 2, "/a2": 2, "/b1": 2, "/block/b": 2, "/b3": 2, "/c": 2, "/d": 2}
	for p, n := range want {
		if got := sys.count(p); got != n {
			t.Errorf("%s: %d requests, want %d (once per run: no recorded step ran again)", p, got, n)
		}
	}
}
