package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/duet-test/duet"
)

// Starter starts a run of taskID as caller through the same start path as
// start_test_run (catalog.StartScheduled: governance, approvals, queue
// caps and budgets, one audit record), with the slot claim fire made in the
// run's transaction and key as the call's idempotency key. replayed is true
// when another scheduler's call with the same key made the run.
type Starter func(ctx context.Context, caller duet.Caller, taskID, key string, fire *duet.ScheduleFire) (runID string, replayed bool, err error)

// Options configure a Scheduler.
type Options struct {
	Store duet.Store
	Start Starter
	// Now is the clock (tests move it by hand); nil means time.Now.
	Now func() time.Time
	// Grace is how late a slot may be found and still count as on time;
	// a later one was missed (no scheduler ran) and follows the
	// schedule's missed policy. 0 means one minute.
	Grace time.Duration
	// MaxWait is the longest Run sleeps between looks. 0 means 30 s.
	MaxWait time.Duration
	// Batch is how many due schedules one Tick takes. 0 means 100.
	Batch  int
	Logger *slog.Logger
	// Fired, if set, is told of each run a schedule started.
	Fired func(scheduleID, runID string)
}

// Scheduler fires the schedules of one store. Any number of them, in any
// number of processes, may run against the same database.
type Scheduler struct {
	o    Options
	wake chan struct{}
}

// New returns a Scheduler.
func New(o Options) *Scheduler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Grace <= 0 {
		o.Grace = time.Minute
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 30 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{o: o, wake: make(chan struct{}, 1)}
}

// Wake makes Run look again now (a schedule of this process changed).
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run fires due schedules until ctx ends: it looks, then sleeps until the
// earliest next slot (at most MaxWait, so that schedules made by other
// instances are seen), or until Wake.
func (s *Scheduler) Run(ctx context.Context) {
	for {
		next, err := s.Tick(ctx)
		if err != nil && ctx.Err() == nil {
			s.o.Logger.WarnContext(ctx, "scheduler", "err", err)
		}
		wait := s.o.MaxWait
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(s.o.Now()), 50*time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Tick handles every schedule due now, and returns the earliest slot still
// to come (zero when there is none). A slot another scheduler handles first
// is left to it.
func (s *Scheduler) Tick(ctx context.Context) (time.Time, error) {
	for round := 0; ; round++ {
		now := s.o.Now()
		due, earliest, err := s.o.Store.DueSchedules(ctx, now, s.o.Batch)
		if err != nil {
			return time.Time{}, err
		}
		retry := false
		for _, sc := range due {
			again, err := s.handle(ctx, sc, now)
			if err != nil {
				if ctx.Err() != nil {
					return time.Time{}, ctx.Err()
				}
				s.o.Logger.WarnContext(ctx, "firing a schedule", "schedule", sc.ID, "err", err)
			}
			retry = retry || again
		}
		if len(due) < s.o.Batch || retry || round == 9 {
			if retry {
				// A slot that could not start for a passing reason
				// (the owner's queue is full): look again soon.
				return now.Add(5 * time.Second), nil
			}
			if len(due) > 0 {
				_, earliest, err = s.o.Store.DueSchedules(ctx, time.Time{}, 1)
			}
			return earliest, err
		}
	}
}

// handle decides one due schedule at now. again is true when the slot is
// to be tried again on a later look.
func (s *Scheduler) handle(ctx context.Context, sc *duet.Schedule, now time.Time) (again bool, err error) {
	slot := sc.NextFireAt
	t, err := Of(sc)
	if err != nil {
		_, err = s.o.Store.PauseScheduleFor(ctx, sc.ID, slot, "its timing no longer parses: "+duet.ErrorMessage(err))
		return false, err
	}
	latest, next, missed := t.Span(slot, now)
	fire := duet.ScheduleFire{ScheduleID: sc.ID, Slot: slot, Next: t.Next(slot), RunSlot: slot}
	late := now.Sub(slot) > s.o.Grace
	if late || missed > 0 {
		// Slots passed while no scheduler ran: one decision for all of
		// them, and the schedule goes on from the next slot to come.
		fire.Next = next
		if sc.Missed != duet.MissedRunOnce {
			_, err := s.o.Store.AdvanceSchedule(ctx, fire, fmt.Sprintf("%d slot(s) from %s were missed while no instance ran (missed: skip)", missed+1, slot.UTC().Format(time.RFC3339)))
			return false, err
		}
		fire.RunSlot = latest
	}
	if reason, err := s.ownerLeft(ctx, sc); err != nil {
		return false, err
	} else if reason != "" {
		_, err := s.o.Store.PauseScheduleFor(ctx, sc.ID, slot, reason)
		return false, err
	}
	if sc.Overlap != duet.OverlapQueue && sc.LastRunID != "" {
		prev, err := s.o.Store.FindRunByID(ctx, "", sc.LastRunID)
		switch {
		case err == nil && !prev.Status.Final():
			_, err := s.o.Store.AdvanceSchedule(ctx, fire, fmt.Sprintf("the slot %s was skipped: run %s was still %s (overlap: skip)", fire.RunSlot.UTC().Format(time.RFC3339), prev.ID, prev.Status))
			return false, err
		case err != nil && duet.ErrorCode(err) != duet.CodeNotFound:
			return true, err
		}
	}
	caller := duet.Caller{UserID: sc.Owner, Source: duet.SourceSchedule, TokenID: sc.TokenID, TraceID: duet.NewTraceID()}
	key := fmt.Sprintf("schedule:%s:%d", sc.ID, fire.RunSlot.Unix())
	fire.Tags = sc.Tags
	runID, replayed, err := s.o.Start(ctx, caller, sc.TaskID, key, &fire)
	switch code := duet.ErrorCode(err); {
	case err == nil && !replayed:
		s.o.Logger.InfoContext(ctx, "schedule fired", "schedule", sc.ID, "task", sc.TaskID, "owner", sc.Owner, "slot", fire.RunSlot, "run", runID)
		if s.o.Fired != nil {
			s.o.Fired(sc.ID, runID)
		}
		return false, nil
	case err == nil, code == duet.CodeConflict:
		return false, nil // another scheduler fired the slot
	case code == duet.CodeNotFound || code == duet.CodePermissionDenied || code == duet.CodeUnauthenticated:
		_, err := s.o.Store.PauseScheduleFor(ctx, sc.ID, slot, fmt.Sprintf("%s can no longer run task %s: %s", sc.Owner, sc.TaskID, duet.ErrorMessage(err)))
		return false, err
	case code == duet.CodeRateLimited && !late:
		return true, nil // the owner's queue or concurrency is full: within the grace, try again
	case code == duet.CodeUnavailable || code == duet.CodeCancelled || code == duet.CodeTimeout || code == duet.CodeInternal:
		return true, err
	default:
		_, aerr := s.o.Store.AdvanceSchedule(ctx, fire, fmt.Sprintf("the run of slot %s did not start: %s: %s", fire.RunSlot.UTC().Format(time.RFC3339), code, duet.ErrorMessage(err)))
		return false, aerr
	}
}

// ownerLeft says why the schedule's owner may no longer run it ("" when
// they may): they no longer see the task (unshared, removed from the team
// it was shared with or that owns it, the task transferred away), or the
// personal access token the schedule was made with was revoked or expired.
func (s *Scheduler) ownerLeft(ctx context.Context, sc *duet.Schedule) (string, error) {
	if _, err := s.o.Store.FindTaskByID(ctx, sc.Owner, sc.TaskID); duet.ErrorCode(err) == duet.CodeNotFound {
		return fmt.Sprintf("its owner %s no longer has access to the task (unshared, removed from the team, or the task was transferred)", sc.Owner), nil
	} else if err != nil {
		return "", err
	}
	if sc.TokenID == "" {
		return "", nil
	}
	tokens, err := s.o.Store.FindTokens(ctx, sc.Owner)
	if err != nil {
		return "", err
	}
	now := s.o.Now()
	if !slices.ContainsFunc(tokens, func(t *duet.Token) bool {
		return t.ID == sc.TokenID && (t.ExpiresAt == nil || t.ExpiresAt.After(now))
	}) {
		return fmt.Sprintf("the personal access token it was made with (%s) was revoked or expired", sc.TokenID), nil
	}
	return "", nil
}
