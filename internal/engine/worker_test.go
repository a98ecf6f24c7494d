package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sqlite"
)

// crashWorkerEnv names the database a child process of TestLostWorkerEndsInError
// works on; the child is a worker that the test kills mid-run.
const crashWorkerEnv = "DUET_TEST_CRASH_WORKER_DB"

// crashWorkerIDEnv names the child worker, so that the test can end the
// lease it held once it is killed.
const crashWorkerIDEnv = "DUET_TEST_CRASH_WORKER_ID"

// TestLostWorkerEndsInError runs a worker in a child process and kills it
// (SIGKILL, like the out-of-memory killer) while it runs a step, twice: each
// time the lease expires and the run is claimed again. After the second loss
// the run ends in error with the reason, and no third worker runs its steps.
//
// The children hold a long lease, which a loaded machine renews in time, and
// the test expires the dead child's lease itself (a renewal by -1s under its
// claim) rather than waiting for it: the loss does not depend on timing.
func TestLostWorkerEndsInError(t *testing.T) {
	if path := os.Getenv(crashWorkerEnv); path != "" {
		runCrashWorker(path)
		return
	}
	t.Parallel()
	var hits atomic.Int32
	hit := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		hit <- struct{}{}
		<-r.Context().Done() // until the worker dies
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "duet.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	res := apply(t, db, "alice", `
task: {name: deadly, baseURL: `+srv.URL+`}
cases:
  - title: brings its worker down
    steps:
      - http: GET /hang
        timeout: 1m
`)
	run := startRun(t, db, res.Task, "alice")
	for i := range 2 {
		id := fmt.Sprintf("crash-%d", i+1)
		cmd := exec.Command(os.Args[0], "-test.run=^TestLostWorkerEndsInError$")
		cmd.Env = append(os.Environ(), crashWorkerEnv+"="+path, crashWorkerIDEnv+"="+id)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-hit:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("worker %d never ran the step", i+1)
		}
		cmd.Process.Kill()
		cmd.Wait()
		// The dead worker's lease ends now; renewing it under the child's
		// claim also shows that the child held the run.
		cur, err := db.FindRunByID(t.Context(), "", run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.RenewLease(t.Context(), duet.LeaseOf(cur, id), -time.Second); err != nil {
			t.Fatalf("expiring worker %d's lease: %v", i+1, err)
		}
	}
	// This worker claims the run, whose second lease has expired.
	worker(t, db, engine.Options{}, engine.WorkerOptions{})
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusError || final.ErrorCode != duet.CodeInterrupted || final.Lost != 2 ||
		!strings.Contains(final.ErrorMessage, "lost 2 times") {
		t.Fatalf("got %s %s lost=%d %q, want error INTERRUPTED after 2 lost workers", final.Status, final.ErrorCode, final.Lost, final.ErrorMessage)
	}
	if n := hits.Load(); n != 2 {
		t.Fatalf("the step ran %d times, want 2 (not again after the second loss)", n)
	}
}

// runCrashWorker is the child process: a worker that runs until it is
// killed. Its lease is long, so that a loaded machine still renews it in
// time: a lease lost to a late heartbeat would count as a loss of its own
// and end the run before the second worker runs the step. The test expires
// the lease once it has killed the child.
func runCrashWorker(path string) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		os.Exit(3)
	}
	w := engine.NewWorker(db, engine.New(db, engine.Options{}), engine.WorkerOptions{ID: os.Getenv(crashWorkerIDEnv), Lease: time.Minute, PollInterval: 20 * time.Millisecond})
	w.Run(ctx)
}

// TestReleasedRunIsNotLost: runs put back by a graceful shutdown are resumed,
// whatever the loss limit.
func TestReleasedRunIsNotLost(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: released}
cases:
  - title: quick
    steps:
      - assert: "true"
`)
	run := startRun(t, db, res.Task, "alice")
	for range 3 {
		c, err := db.ClaimRun(t.Context(), "w", time.Minute)
		if err != nil || c == nil {
			t.Fatalf("claim: %v", err)
		}
		if err := db.ReleaseRun(t.Context(), duet.LeaseOf(c, "w")); err != nil {
			t.Fatal(err)
		}
	}
	worker(t, db, engine.Options{}, engine.WorkerOptions{MaxLost: 1})
	if final := waitFinal(t, db, run.ID); final.Status != duet.StatusPassed || final.Lost != 0 {
		t.Fatalf("got %s lost=%d, want passed", final.Status, final.Lost)
	}
}

// TestExpressionBombFailsTheStep: the security review's expression, in a
// task shared with the executor, fails its step with a clear reason instead
// of taking the process down, and the run ends.
func TestExpressionBombFailsTheStep(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: bomb, sharedWith: [bob]}
cases:
  - title: builds 5 GB
    steps:
      - set: {big: "repeat(repeat('a', 999999), 5000)"}
      - assert: "len(big) > 0"
`)
	run := startRun(t, db, res.Task, "bob")
	worker(t, db, engine.Options{}, engine.WorkerOptions{})
	final := waitFinal(t, db, run.ID)
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	step := execs[0].Results[0]
	if final.Status != duet.StatusFailed || step.ErrorCode != duet.CodeBindingFailed || !strings.Contains(step.ErrorMessage, "repeat would build") {
		t.Fatalf("got run %s, step %s %q; want the set step to fail with BINDING_FAILED naming the budget", final.Status, step.ErrorCode, step.ErrorMessage)
	}
	t.Logf("step error: %s", step.ErrorMessage)
}

// TestCaseVariablesAreBudgeted: each variable is bounded by the expression
// budget, and the variables of one case together by MaxVarBytes — the step
// whose value would pass it fails with BINDING_FAILED and saves nothing, so
// a case cannot hold many large values at once; replacing a variable frees
// its share.
func TestCaseVariablesAreBudgeted(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	res := apply(t, db, "alice", `
task: {name: hoard}
cases:
  - title: keeps replacing one variable
    steps:
      - set: {a: "repeat('a', 25000)"}
      - set: {a: "repeat('b', 25000)"}
      - set: {a: "repeat('c', 25000)"}
  - title: hoards
    steps:
      - set: {a: "repeat('a', 25000)"}
      - set: {b: "repeat('b', 25000)"}
      - set: {c: "repeat('c', 25000)"}
      - assert: "len(c) > 0"
`)
	run := startRun(t, db, res.Task, "alice")
	// Two values fit in the budget, three do not. (The sizes were 400 KB
	// in a 1 MiB budget: every step stores the case's variables, and
	// under -race the SQLite driver, C translated to Go, copies those
	// megabytes instrumented byte by byte — 3 to 10 s alone, past the
	// 20 s waitFinal gave on a loaded machine: "run did not finish".)
	worker(t, db, engine.Options{MaxVarBytes: 64 << 10}, engine.WorkerOptions{})
	waitFinal(t, db, run.ID)
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range execs {
		switch x.CaseTitle {
		case "keeps replacing one variable":
			if x.Status != duet.StatusPassed {
				t.Errorf("%s: %s %s, want passed", x.CaseTitle, x.Status, x.ErrorMessage)
			}
		case "hoards":
			if step := x.Results[2]; x.Status != duet.StatusFailed || step.ErrorCode != duet.CodeBindingFailed || !strings.Contains(step.ErrorMessage, "variables together") {
				t.Errorf("%s: %s, step 3 %s %q; want the third set to fail with BINDING_FAILED", x.CaseTitle, x.Status, step.ErrorCode, step.ErrorMessage)
			}
		}
	}
}
