package engine_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sqlite"
)

// sut is a system under test that counts the requests each path received,
// and holds the requests to /block/... until released (or aborted).
type sut struct {
	*httptest.Server
	mu      sync.Mutex
	hits    map[string]int
	reached chan string   // a /block/... request arrived
	release chan struct{} // closed: blocked requests answer
	aborted chan string   // a blocked request was aborted by its client
}

func newSUT(t *testing.T) *sut {
	s := &sut{hits: map[string]int{}, reached: make(chan string, 16), release: make(chan struct{}), aborted: make(chan string, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/block/") {
			s.reached <- r.URL.Path
			select {
			case <-s.release:
			case <-r.Context().Done():
				s.aborted <- r.URL.Path
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sut) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// syncLog is a log the test reads while the worker writes it.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until the worker logs what; if wrong returns a message
// first, the test fails with it.
func (l *syncLog) waitFor(t *testing.T, what string, wrong func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(l.String(), what) {
		if msg := wrong(); msg != "" {
			t.Fatal(msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never logged %q:\n%s", what, l.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hit returns a wrong func for waitFor: path reached the system under test.
func (s *sut) hit(path, msg string) func() string {
	return func() string {
		if n := s.count(path); n != 0 {
			return fmt.Sprintf("%s (%d requests to %s)", msg, n, path)
		}
		return ""
	}
}

// TestLeaseLostStopsTheRun: a worker whose lease ran out while a step of
// its run was in flight (it stalled), and whose run another worker then
// claimed, has its next write refused (LEASE_LOST) and stops running the
// run at once: no further step of it reaches the system under test, and
// nothing of it is written over the new holder's.
func TestLeaseLostStopsTheRun(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	sys := newSUT(t)
	res := apply(t, db, "alice", `
task: {name: fenced, baseURL: `+sys.URL+`}
cases:
  - title: two steps
    steps:
      - http: GET /block/one
        timeout: 1m
      - http: GET /after
`)
	logs := &syncLog{}
	// One run at a time: with a free slot, A's own poll could claim the run
	// back between the expiry below and B's claim (CI saw B find nothing).
	worker(t, db, engine.Options{}, engine.WorkerOptions{ID: "A", Concurrency: 1, Lease: time.Minute, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	run := startRun(t, db, res.Task, "alice")
	<-sys.reached
	// The lease runs out while the step is in flight (the worker stalled
	// past it), and another worker takes the run over.
	if _, err := db.SQL().ExecContext(t.Context(), `UPDATE runs SET lease_expires_at = 0 WHERE id = ?`, run.ID); err != nil {
		t.Fatal(err)
	}
	b, err := db.ClaimRun(t.Context(), "B", time.Minute)
	if err != nil || b == nil || b.ID != run.ID || b.Attempt != 2 {
		t.Fatalf("take-over: %+v %v", b, err)
	}
	close(sys.release) // the old holder's step answers
	tooFar := sys.hit("/after", "the worker that lost the lease sent its next step to the system under test")
	logs.waitFor(t, "run not given back: another worker holds it", tooFar)
	if msg := tooFar(); msg != "" {
		t.Fatal(msg)
	}
	cur, _ := db.FindRunByID(t.Context(), "", run.ID)
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	if cur.Status != duet.StatusRunning || cur.Attempt != 2 || len(execs[0].Results) != 0 {
		t.Fatalf("the run after the old holder stopped: %s attempt %d, %d step results; want the new holder's, untouched", cur.Status, cur.Attempt, len(execs[0].Results))
	}
	if !strings.Contains(logs.String(), "LEASE_LOST") {
		t.Fatalf("the refusal is not in the log:\n%s", logs.String())
	}
}

// outage is a store whose database is away while down is set: every call a
// worker makes fails with UNAVAILABLE, as during a PostgreSQL outage.
type outage struct {
	*sqlite.DB
	down    atomic.Bool
	refused atomic.Int32
	// hang makes the heartbeat's reads and renewals wait until their
	// context ends, as a database that accepts them and answers nothing
	// (a lock wait, a hung server).
	hang atomic.Bool
	hung atomic.Int32
}

// unanswered waits for ctx to end while hang is set.
func (s *outage) unanswered(ctx context.Context) error {
	if !s.hang.Load() {
		return nil
	}
	s.hung.Add(1)
	<-ctx.Done()
	return duet.WrapError(duet.CodeTimeout, ctx.Err(), "the database did not answer")
}

func (s *outage) away() error {
	if s.down.Load() {
		s.refused.Add(1)
		return duet.Errorf(duet.CodeUnavailable, "database unavailable")
	}
	return nil
}

func (s *outage) ClaimRun(ctx context.Context, worker string, lease time.Duration) (*duet.Run, error) {
	if err := s.away(); err != nil {
		return nil, err
	}
	return s.DB.ClaimRun(ctx, worker, lease)
}

func (s *outage) FindRunByID(ctx context.Context, viewer, id string) (*duet.Run, error) {
	if err := cmp.Or(s.away(), s.unanswered(ctx)); err != nil {
		return nil, err
	}
	return s.DB.FindRunByID(ctx, viewer, id)
}

func (s *outage) RenewLease(ctx context.Context, l duet.Lease, d time.Duration) (*duet.Run, error) {
	if err := cmp.Or(s.away(), s.unanswered(ctx)); err != nil {
		return nil, err
	}
	return s.DB.RenewLease(ctx, l, d)
}

func (s *outage) StartExecution(ctx context.Context, l duet.Lease, x *duet.Execution) error {
	if err := s.away(); err != nil {
		return err
	}
	return s.DB.StartExecution(ctx, l, x)
}

func (s *outage) SaveStepResult(ctx context.Context, l duet.Lease, id string, r *duet.StepResult, vars map[string]any) error {
	if err := s.away(); err != nil {
		return err
	}
	return s.DB.SaveStepResult(ctx, l, id, r, vars)
}

func (s *outage) FinishExecution(ctx context.Context, l duet.Lease, x *duet.Execution) error {
	if err := s.away(); err != nil {
		return err
	}
	return s.DB.FinishExecution(ctx, l, x)
}

func (s *outage) FinishRun(ctx context.Context, l duet.Lease, r *duet.Run) error {
	if err := s.away(); err != nil {
		return err
	}
	return s.DB.FinishRun(ctx, l, r)
}

func (s *outage) ReleaseRun(ctx context.Context, l duet.Lease) error {
	if err := s.away(); err != nil {
		return err
	}
	return s.DB.ReleaseRun(ctx, l)
}

// outageWorker runs a worker on st until the test ends.
func outageWorker(t *testing.T, st *outage, opts engine.Options, wopts engine.WorkerOptions) *syncLog {
	t.Helper()
	logs := &syncLog{}
	wopts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	wopts.PollInterval = 20 * time.Millisecond
	w := engine.NewWorker(st, engine.New(st, opts), wopts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return logs
}

// TestOutageLongerThanTheWriteWait: the database goes away as a step
// finishes and stays away longer than the write wait. The run stops at
// once — its next step never reaches the system under test while the
// result of the last one is unwritten — and is given back when the
// database returns (not counted as a lost worker); resumed, it ends passed
// with every step result, the interrupted case run again from its start.
// It never reads "passed" over a result that was not written.
func TestOutageLongerThanTheWriteWait(t *testing.T) {
	t.Parallel()
	st := &outage{DB: openStore(t)}
	sys := newSUT(t)
	res := apply(t, st.DB, "alice", `
task: {name: outage, baseURL: `+sys.URL+`}
cases:
  - title: three steps
    steps:
      - http: GET /block/first
        timeout: 1m
      - http: GET /second
      - http: GET /third
`)
	logs := outageWorker(t, st, engine.Options{WriteWait: 3 * time.Second}, engine.WorkerOptions{Lease: time.Minute})
	run := startRun(t, st.DB, res.Task, "alice")
	<-sys.reached
	st.down.Store(true) // the database goes away while the step runs
	close(sys.release)
	tooFar := sys.hit("/second", "the run went on to its next step while the result of the last one was unwritten")
	logs.waitFor(t, "run stopped without a verdict", tooFar)
	// Longer than the write wait: the worker has given up writing and keeps
	// trying to give the run back.
	for st.refused.Load() < 10 {
		time.Sleep(10 * time.Millisecond)
	}
	if msg := tooFar(); msg != "" {
		t.Fatal(msg)
	}
	st.down.Store(false) // the database is back
	final := waitFinal(t, st.DB, run.ID)
	execs, _ := st.DB.FindExecutions(t.Context(), run.ID)
	if final.Status != duet.StatusPassed || final.Attempt != 2 || final.Lost != 0 || len(execs[0].Results) != 3 {
		t.Fatalf("after the outage: %s, attempt %d, lost %d, %d of 3 step results; want passed with every result, given back (not lost)\n%s",
			final.Status, final.Attempt, final.Lost, len(execs[0].Results), logs)
	}
	if a, b, c := sys.count("/block/first"), sys.count("/second"), sys.count("/third"); a != 2 || b != 1 || c != 1 {
		t.Fatalf("requests: first %d, second %d, third %d; want the interrupted case run again from its start, once", a, b, c)
	}
}

// TestLeaseRunsOutDuringAnOutage: while the database is away the worker
// cannot renew its lease; before the lease runs out — when another worker
// may take the run over — it stops the run, aborting the step in flight,
// so that no two workers ever run the run's steps at once. The run is
// given back when the database returns. The same when the database takes
// the heartbeat's calls and answers none of them (hangs): a call that
// waited past the lease held the heartbeat, and the run's steps went on
// after another worker could have taken it over.
func TestLeaseRunsOutDuringAnOutage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		flag func(*outage) *atomic.Bool
	}{
		{"away", func(st *outage) *atomic.Bool { return &st.down }},
		{"hangs", func(st *outage) *atomic.Bool { return &st.hang }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			leaseRunsOut(t, tt.flag)
		})
	}
}

func leaseRunsOut(t *testing.T, flag func(*outage) *atomic.Bool) {
	st := &outage{DB: openStore(t)}
	sys := newSUT(t)
	res := apply(t, st.DB, "alice", `
task: {name: expiry, baseURL: `+sys.URL+`}
cases:
  - title: a long step
    steps:
      - http: GET /block/long
        timeout: 5m
      - http: GET /after
`)
	logs := outageWorker(t, st, engine.Options{WriteWait: 5 * time.Minute}, engine.WorkerOptions{Lease: 2 * time.Second})
	run := startRun(t, st.DB, res.Task, "alice")
	<-sys.reached
	flag(st).Store(true)
	select {
	case <-sys.aborted:
	case <-time.After(60 * time.Second):
		t.Fatalf("the step in flight was not stopped while the lease ran out (%d calls refused, %d unanswered):\n%s", st.refused.Load(), st.hung.Load(), logs.String())
	}
	if st.refused.Load()+st.hung.Load() == 0 {
		t.Fatal("no call of the heartbeat met the outage")
	}
	if !strings.Contains(logs.String(), "runs out without a renewal") {
		t.Fatalf("the worker does not say why it stopped:\n%s", logs.String())
	}
	if n := sys.count("/after"); n != 0 {
		t.Fatalf("%d later steps ran", n)
	}
	flag(st).Store(false)
	close(sys.release)
	final := waitFinal(t, st.DB, run.ID)
	if final.Status != duet.StatusPassed || final.Attempt != 2 {
		t.Fatalf("after the outage: %s attempt %d, want passed at the second attempt", final.Status, final.Attempt)
	}
}
