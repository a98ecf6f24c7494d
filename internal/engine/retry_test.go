package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sqlite"
)

// restarting is a store whose database is away for its first writes of a
// run's bookkeeping, as during a PostgreSQL restart: each fails once with
// UNAVAILABLE before it goes through.
type restarting struct {
	*sqlite.DB
	failed atomic.Int32
}

func (s *restarting) down() error {
	s.failed.Add(1)
	return duet.Errorf(duet.CodeUnavailable, "database unavailable")
}

func (s *restarting) SaveStepResult(ctx context.Context, l duet.Lease, id string, r *duet.StepResult, vars map[string]any) error {
	if s.failed.Load()%2 == 0 {
		return s.down()
	}
	s.failed.Add(1)
	return s.DB.SaveStepResult(ctx, l, id, r, vars)
}

func (s *restarting) FinishExecution(ctx context.Context, l duet.Lease, x *duet.Execution) error {
	if s.failed.Load()%2 == 0 {
		return s.down()
	}
	s.failed.Add(1)
	return s.DB.FinishExecution(ctx, l, x)
}

func (s *restarting) FinishRun(ctx context.Context, l duet.Lease, r *duet.Run) error {
	if s.failed.Load()%2 == 0 {
		return s.down()
	}
	s.failed.Add(1)
	return s.DB.FinishRun(ctx, l, r)
}

// TestDatabaseRestartDuringRun: writes refused while the database restarts
// are retried, so the run ends with every step result and its final state,
// not with holes in its report or stuck running.
func TestDatabaseRestartDuringRun(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	res := apply(t, db, "alice", `
task: {name: api, baseURL: `+srv.URL+`}
cases:
  - key: a
    title: order is paid
    steps:
      - http: {url: /orders/A1, saveAs: order}
      - assert: order.status == 200
      - assert: order.body.status == "paid"
`)
	st := &restarting{DB: db}
	w := engine.NewWorker(st, engine.New(st, engine.Options{}), engine.WorkerOptions{PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	run := startRun(t, db, res.Task, "alice")
	final := waitFinal(t, db, run.ID)
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != duet.StatusPassed || len(execs) != 1 || len(execs[0].Results) != 3 || execs[0].Status != duet.StatusPassed {
		t.Fatalf("got run %s, %d step results, want passed with all 3 results", final.Status, len(execs[0].Results))
	}
	if st.failed.Load() < 10 {
		t.Fatalf("the store refused %d writes, want every write refused once", st.failed.Load())
	}
}
