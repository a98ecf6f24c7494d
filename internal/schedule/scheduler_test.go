package schedule_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
	"github.com/duet-test/duet/internal/schedule"
	"github.com/duet-test/duet/internal/sqlite"
)

// clock is a time the test moves by hand: no test here sleeps.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// instance is one Duet process: its own connection to the database, its
// own catalog (the start path of start_test_run) and its own scheduler.
type instance struct {
	store duet.Store
	sched *schedule.Scheduler
	audit *recorder
}

// recorder keeps the audit records of an instance's catalog.
type recorder struct {
	mu   sync.Mutex
	recs []*duet.AuditRecord
}

func (r *recorder) Record(rec *duet.AuditRecord) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) starts() (n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.CallSource == duet.SourceSchedule && rec.Caller == "alice" && rec.Tool == catalog.ToolStartRun && rec.Outcome == duet.OutcomeOK {
			n++
		}
	}
	return n
}

// engines opens, for each database engine, a way to start instances on
// one shared database.
func engines(t *testing.T) map[string]func(t *testing.T) func() duet.Store {
	return map[string]func(t *testing.T) func() duet.Store{
		"sqlite": func(t *testing.T) func() duet.Store {
			path := filepath.Join(t.TempDir(), "duet.db")
			return func() duet.Store {
				db, err := sqlite.Open(t.Context(), path, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
		},
		"postgres": func(t *testing.T) func() duet.Store {
			url := pgtest.URL(t)
			return func() duet.Store {
				db, err := postgres.Open(t.Context(), url, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
		},
	}
}

func start(st duet.Store, clk *clock) *instance {
	rec := &recorder{}
	cat := catalog.New(st, catalog.Options{Now: clk.Now, Auditor: rec})
	return &instance{store: st, sched: schedule.New(schedule.Options{Store: st, Start: cat.StartScheduled, Now: clk.Now}), audit: rec}
}

var t0 = time.Date(2031, 3, 10, 2, 0, 0, 0, time.UTC)

// seed makes alice's task with one case and a schedule on it.
func seed(t *testing.T, st duet.Store, sc *duet.Schedule) (*duet.Task, *duet.Schedule) {
	t.Helper()
	res, err := st.ApplySuite(t.Context(), "alice", &duet.Suite{Task: duet.Task{Name: "shop", BaseURL: "http://127.0.0.1:1"},
		Cases: []*duet.Case{{Key: "a", Title: "a", Source: "s", SourceHash: "h", Steps: []duet.Step{{Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sc.TaskID = res.Task.ID
	if sc.Owner == "" {
		sc.Owner = "alice"
	}
	if sc.Name == "" {
		sc.Name = "s"
	}
	if sc.Missed == "" {
		sc.Missed = duet.MissedSkip
	}
	if sc.Overlap == "" {
		sc.Overlap = duet.OverlapQueue
	}
	if sc.NextFireAt.IsZero() {
		sc.NextFireAt = t0
	}
	if err := st.CreateSchedule(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	return res.Task, sc
}

func runsOf(t *testing.T, st duet.Store, taskID string) []*duet.Run {
	t.Helper()
	runs, _, err := st.FindRuns(t.Context(), duet.RunFilter{Viewer: "alice", TaskID: taskID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func tickAll(t *testing.T, insts ...*instance) {
	t.Helper()
	var wg sync.WaitGroup
	for _, in := range insts {
		wg.Go(func() {
			if _, err := in.sched.Tick(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// passRun records every step of r as passed and ends it, each write fenced
// by l (what a worker's engine does).
func passRun(t *testing.T, st duet.Store, l duet.Lease, r *duet.Run) {
	t.Helper()
	execs, err := st.FindExecutions(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, x := range execs {
		x.StartedAt = &now
		if err := st.StartExecution(t.Context(), l, x); err != nil {
			t.Fatal(err)
		}
		for _, s := range x.Steps {
			if err := st.SaveStepResult(t.Context(), l, x.ID, &duet.StepResult{Index: s.Index, Kind: s.Kind, Name: s.Name, Status: duet.StatusPassed}, nil); err != nil {
				t.Fatal(err)
			}
		}
		x.Status, x.FinishedAt = duet.StatusPassed, &now
		if err := st.FinishExecution(t.Context(), l, x); err != nil {
			t.Fatal(err)
		}
	}
	r.Status, r.FinishedAt = duet.StatusPassed, &now
	if err := st.FinishRun(t.Context(), l, r); err != nil {
		t.Fatal(err)
	}
}

func reload(t *testing.T, st duet.Store, id string) *duet.Schedule {
	t.Helper()
	sc, err := st.FindScheduleByID(t.Context(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestOncePerSlotTwoInstances: two instances on one database (SQLite and
// PostgreSQL) look at the same moments, slot after slot, and several times
// within each slot: every slot makes exactly one run, as alice, from the
// schedule.
func TestOncePerSlotTwoInstances(t *testing.T) {
	for name, eng := range engines(t) {
		t.Run(name, func(t *testing.T) {
			open := eng(t)
			clk := &clock{now: t0.Add(-time.Minute)}
			a, b := start(open(), clk), start(open(), clk)
			task, sc := seed(t, a.store, &duet.Schedule{Cron: "0 * * * *", TimeZone: "Europe/Paris"})
			tickAll(t, a, b)
			if n := len(runsOf(t, a.store, task.ID)); n != 0 {
				t.Fatalf("%d runs before the first slot", n)
			}
			const slots = 5
			for i := range slots {
				slot := t0.Add(time.Duration(i) * time.Hour)
				for _, at := range []time.Duration{0, time.Second, 30 * time.Second} {
					clk.Set(slot.Add(at))
					tickAll(t, a, b)
				}
				if got := reload(t, b.store, sc.ID); !got.NextFireAt.Equal(slot.Add(time.Hour)) || got.LastFireAt == nil || !got.LastFireAt.Equal(slot) {
					t.Fatalf("slot %d: schedule %+v", i, got)
				}
			}
			runs := runsOf(t, b.store, task.ID)
			if len(runs) != slots {
				t.Fatalf("%d runs for %d slots", len(runs), slots)
			}
			for _, r := range runs {
				if r.TriggeredBy != "alice" || r.CallSource != duet.SourceSchedule || r.Status != duet.StatusQueued {
					t.Fatalf("scheduled run: %+v", r)
				}
			}
			// Each start went through the catalog's governance: one
			// audit record per run, as alice, from the schedule.
			if n := a.audit.starts() + b.audit.starts(); n != slots {
				t.Fatalf("%d audited scheduled starts for %d runs", n, slots)
			}
		})
	}
}

// TestRestartMidSlot: an instance that dies while starting a slot's run
// (its transaction never commits) leaves the slot to the next look, by the
// restarted instance or another: the slot fires once, not zero times and
// not twice.
func TestRestartMidSlot(t *testing.T) {
	for name, eng := range engines(t) {
		t.Run(name, func(t *testing.T) {
			open := eng(t)
			clk := &clock{now: t0}
			st := open()
			task, sc := seed(t, st, &duet.Schedule{Every: time.Hour})
			// The first instance dies in the middle of the start: the
			// store call is cut off before it commits.
			dying := schedule.New(schedule.Options{Store: st, Now: clk.Now,
				Start: func(ctx context.Context, c duet.Caller, taskID, key string, f *duet.ScheduleFire) (string, bool, error) {
					cctx, cancel := context.WithCancel(ctx)
					cancel()
					return catalog.New(st, catalog.Options{Now: clk.Now}).StartScheduled(cctx, c, taskID, key, f)
				}})
			dying.Tick(t.Context())
			if n := len(runsOf(t, st, task.ID)); n != 0 {
				t.Fatalf("a start cut off before its commit made %d runs", n)
			}
			// It restarts (a new connection) 20 seconds into the slot,
			// while a second instance starts too.
			clk.Set(t0.Add(20 * time.Second))
			restarted, other := start(open(), clk), start(open(), clk)
			tickAll(t, restarted, other)
			tickAll(t, restarted, other)
			if n := len(runsOf(t, st, task.ID)); n != 1 {
				t.Fatalf("after the restart: %d runs for the slot, want 1", n)
			}
			if got := reload(t, st, sc.ID); !got.NextFireAt.Equal(t0.Add(time.Hour)) {
				t.Fatalf("next fire: %v", got.NextFireAt)
			}
		})
	}
}

// TestMissedSlots: everything was down for five hours. skip drops the
// missed slots (and says so), runOnce makes one run for them; both go on
// from the next slot to come.
func TestMissedSlots(t *testing.T) {
	for name, eng := range engines(t) {
		t.Run(name, func(t *testing.T) {
			open := eng(t)
			clk := &clock{now: t0.Add(5*time.Hour + 10*time.Minute)}
			st := open()
			in := start(st, clk)
			skipTask, skip := seed(t, st, &duet.Schedule{Cron: "0 * * * *", Missed: duet.MissedSkip})
			res, err := st.ApplySuite(t.Context(), "alice", &duet.Suite{Task: duet.Task{Name: "shop2", BaseURL: "http://127.0.0.1:1"},
				Cases: []*duet.Case{{Key: "a", Title: "a", Source: "s", SourceHash: "h", Steps: []duet.Step{{Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}}}})
			if err != nil {
				t.Fatal(err)
			}
			once := &duet.Schedule{TaskID: res.Task.ID, Owner: "alice", Name: "once", Every: time.Hour, Missed: duet.MissedRunOnce, Overlap: duet.OverlapSkip, NextFireAt: t0}
			if err := st.CreateSchedule(t.Context(), once); err != nil {
				t.Fatal(err)
			}
			tickAll(t, in, start(open(), clk))
			want := t0.Add(6 * time.Hour)
			if n := len(runsOf(t, st, skipTask.ID)); n != 0 {
				t.Fatalf("missed: skip made %d runs", n)
			}
			got := reload(t, st, skip.ID)
			if !got.NextFireAt.Equal(want) || !strings.Contains(got.LastError, "6 slot(s)") {
				t.Fatalf("missed: skip: %+v", got)
			}
			if n := len(runsOf(t, st, res.Task.ID)); n != 1 {
				t.Fatalf("missed: runOnce made %d runs, want 1", n)
			}
			got = reload(t, st, once.ID)
			if !got.NextFireAt.Equal(want) || got.LastFireAt == nil || !got.LastFireAt.Equal(t0.Add(5*time.Hour)) {
				t.Fatalf("missed: runOnce: %+v", got)
			}
		})
	}
}

// TestOverlap: with overlap skip, a slot that comes while the previous run
// is still queued or running makes no run (and says why); once that run
// has ended, the next slot runs. With queue, every slot makes a run.
func TestOverlap(t *testing.T) {
	for name, eng := range engines(t) {
		t.Run(name, func(t *testing.T) {
			open := eng(t)
			clk := &clock{now: t0}
			st := open()
			in := start(st, clk)
			task, sc := seed(t, st, &duet.Schedule{Every: time.Hour, Overlap: duet.OverlapSkip})
			tickAll(t, in)
			clk.Set(t0.Add(time.Hour))
			tickAll(t, in)
			runs := runsOf(t, st, task.ID)
			if len(runs) != 1 {
				t.Fatalf("overlap skip: %d runs, want 1", len(runs))
			}
			got := reload(t, st, sc.ID)
			if !strings.Contains(got.LastError, "overlap: skip") || !got.NextFireAt.Equal(t0.Add(2*time.Hour)) {
				t.Fatalf("skipped slot: %+v", got)
			}
			// A worker claims the run from the queue like any run and
			// ends it under its lease; the next slot runs.
			r, err := st.ClaimRun(t.Context(), "w", time.Minute)
			if err != nil || r == nil || r.ID != runs[0].ID {
				t.Fatalf("claim: %+v %v, want run %s", r, err, runs[0].ID)
			}
			passRun(t, st, duet.LeaseOf(r, "w"), r)
			clk.Set(t0.Add(2 * time.Hour))
			tickAll(t, in)
			if n := len(runsOf(t, st, task.ID)); n != 2 {
				t.Fatalf("after the previous run ended: %d runs, want 2", n)
			}
		})
	}
}

// TestOwnerLeaves: a schedule whose owner can no longer see the task
// (unshared), or whose token was revoked, pauses with the reason and
// starts nothing.
func TestOwnerLeaves(t *testing.T) {
	for name, eng := range engines(t) {
		t.Run(name, func(t *testing.T) {
			open := eng(t)
			clk := &clock{now: t0}
			st := open()
			in := start(st, clk)
			task, _ := seed(t, st, &duet.Schedule{Every: time.Hour, Name: "alice's"})
			if err := st.ShareTask(t.Context(), "alice", task.ID, "bob"); err != nil {
				t.Fatal(err)
			}
			bobs := &duet.Schedule{TaskID: task.ID, Owner: "bob", Name: "bob's", Every: time.Hour, Missed: duet.MissedSkip, Overlap: duet.OverlapQueue, NextFireAt: t0}
			if err := st.CreateSchedule(t.Context(), bobs); err != nil {
				t.Fatal(err)
			}
			tok := &duet.Token{ID: duet.NewID("tok"), UserID: "alice", Name: "ci", Hash: duet.NewID("h")}
			if err := st.CreateToken(t.Context(), tok); err != nil {
				t.Fatal(err)
			}
			withToken := &duet.Schedule{TaskID: task.ID, Owner: "alice", TokenID: tok.ID, Name: "ci", Every: time.Hour, Missed: duet.MissedSkip, Overlap: duet.OverlapQueue, NextFireAt: t0}
			if err := st.CreateSchedule(t.Context(), withToken); err != nil {
				t.Fatal(err)
			}
			if err := st.UnshareTask(t.Context(), "alice", task.ID, "bob"); err != nil {
				t.Fatal(err)
			}
			if err := st.DeleteToken(t.Context(), "alice", tok.ID); err != nil {
				t.Fatal(err)
			}
			tickAll(t, in)
			runs := runsOf(t, st, task.ID)
			if len(runs) != 1 || runs[0].TriggeredBy != "alice" {
				t.Fatalf("runs: %+v, want alice's schedule's only", runs)
			}
			if got := reload(t, st, bobs.ID); !got.Paused || !strings.Contains(got.PausedReason, "bob no longer has access") {
				t.Fatalf("bob's schedule: %+v", got)
			}
			if got := reload(t, st, withToken.ID); !got.Paused || !strings.Contains(got.PausedReason, "revoked") {
				t.Fatalf("the revoked token's schedule: %+v", got)
			}
		})
	}
}

// TestTiming: cron in a time zone across a daylight-saving change, and the
// words refused.
func TestTiming(t *testing.T) {
	tm, err := schedule.Parse("0 2 * * *", "Europe/Paris", 0)
	if err != nil {
		t.Fatal(err)
	}
	// 2 a.m. in Paris is 01:00 UTC in winter and 00:00 UTC in summer.
	if got := tm.Next(time.Date(2031, 1, 10, 12, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2031, 1, 11, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("winter: %v", got)
	}
	if got := tm.Next(time.Date(2031, 7, 10, 12, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2031, 7, 11, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("summer: %v", got)
	}
	for _, bad := range []struct {
		cron, tz string
		every    time.Duration
	}{
		{"", "", 0}, {"0 2 * * *", "", time.Hour}, {"0 2 * *", "", 0}, {"0 2 * * *", "Mars/Olympus", 0},
		{"CRON_TZ=UTC 0 2 * * *", "", 0}, {"@every 1h", "", 0}, {"", "", 30 * time.Second}, {"", "UTC", time.Hour}, {"0 0 30 2 *", "", 0},
	} {
		if _, err := schedule.Parse(bad.cron, bad.tz, bad.every); duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("Parse(%q, %q, %s): got %v, want INVALID_ARGUMENT", bad.cron, bad.tz, bad.every, err)
		}
	}
	if _, err := schedule.Parse("@daily", "", 0); err != nil {
		t.Fatal(err)
	}
}

// TestScheduleTags: a schedule with tags starts runs of the cases with
// any of them only.
func TestScheduleTags(t *testing.T) {
	for name, eng := range engines(t) {
		t.Run(name, func(t *testing.T) {
			st := eng(t)()
			clk := &clock{now: t0}
			in := start(st, clk)
			assert := []duet.Step{{Kind: duet.StepAssert, Name: "true", Assert: &duet.AssertStep{Expr: "true"}}}
			res, err := st.ApplySuite(t.Context(), "alice", &duet.Suite{Task: duet.Task{Name: "tagged", BaseURL: "http://127.0.0.1:1"},
				Cases: []*duet.Case{
					{Key: "a", Title: "a", Source: "a", SourceHash: "a", Steps: assert, Tags: []string{"smoke"}},
					{Key: "b", Title: "b", Source: "b", SourceHash: "b", Steps: assert},
				},
				Schedules: []*duet.Schedule{{Name: "smoke", Every: time.Hour, Missed: duet.MissedSkip, Overlap: duet.OverlapQueue, NextFireAt: t0, Tags: []string{"smoke"}}}})
			if err != nil {
				t.Fatal(err)
			}
			tickAll(t, in)
			runs := runsOf(t, st, res.Task.ID)
			if len(runs) != 1 {
				t.Fatalf("%d runs", len(runs))
			}
			execs, err := st.FindExecutions(t.Context(), runs[0].ID)
			if err != nil || len(execs) != 1 || execs[0].CaseKey != "a" {
				t.Fatalf("the scheduled run's cases: %v %+v", err, execs)
			}
		})
	}
}
