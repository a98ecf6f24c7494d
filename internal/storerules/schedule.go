package storerules

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/duet-test/duet"
)

// ScheduleColumns are the columns of schedules s that ScanSchedule reads.
const ScheduleColumns = `s.id, s.task_id, s.owner, s.token_id, s.name, s.source, s.cron, s.time_zone, s.every_ms, s.missed, s.overlap,
	s.paused, s.paused_reason, s.next_fire_at, s.last_fire_at, s.last_run_id, s.last_error, s.created_at, s.updated_at, s.tags`

// ScanSchedule reads a schedule of ScheduleColumns.
func ScanSchedule(r Row) (*duet.Schedule, error) {
	var s duet.Schedule
	var every int64
	var tags string
	if err := r.Scan(&s.ID, &s.TaskID, &s.Owner, &s.TokenID, &s.Name, &s.Source, &s.Cron, &s.TimeZone, &every, &s.Missed, &s.Overlap,
		&s.Paused, &s.PausedReason, TimeOf(&s.NextFireAt), TimePtrOf(&s.LastFireAt), &s.LastRunID, &s.LastError, TimeOf(&s.CreatedAt), TimeOf(&s.UpdatedAt), &tags); err != nil {
		return nil, err
	}
	if tags != "" {
		if err := json.Unmarshal([]byte(tags), &s.Tags); err != nil {
			return nil, fmt.Errorf("schedule %s: decoding its tags: %w", s.ID, err)
		}
	}
	s.Every = time.Duration(every) * time.Millisecond
	return &s, nil
}

// InsertSchedule writes the new schedule s, created at now, on e (a
// transaction's): its id and times are set, its next slot kept to the
// microsecond. Returns CONFLICT for a name its owner has on the task
// already.
func InsertSchedule(ctx context.Context, e Engine, s *duet.Schedule, now time.Time) error {
	s.ID, s.CreatedAt, s.UpdatedAt, s.NextFireAt = duet.NewID("sched"), now, now, s.NextFireAt.Truncate(time.Microsecond)
	_, err := e.Exec(ctx, `INSERT INTO schedules (id, task_id, owner, token_id, name, source, cron, time_zone, every_ms, missed, overlap, paused, paused_reason, next_fire_at, created_at, updated_at, tags)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16)`,
		s.ID, s.TaskID, s.Owner, s.TokenID, s.Name, s.Source, s.Cron, s.TimeZone, s.Every.Milliseconds(), s.Missed, s.Overlap, s.Paused, s.PausedReason,
		e.Stored(s.NextFireAt), e.Stored(now), EncodeTags(s.Tags))
	if duet.ErrorCode(err) == duet.CodeConflict {
		return duet.Errorf(duet.CodeConflict, "%s already has a schedule named %q on this task", s.Owner, s.Name)
	}
	return err
}

// ManagedSchedule reads, in one engine's transaction, the schedule id that
// by may change (and on engines with row locks, locks it): NOT_FOUND,
// PERMISSION_DENIED.
type ManagedSchedule func(ctx context.Context, by, id string) (*duet.Schedule, error)

// SetSchedulePaused pauses the schedule id, managed by by, for reason, or
// resumes it at next, on e (the transaction manage reads in); it returns
// the schedule as stored.
func SetSchedulePaused(ctx context.Context, e Engine, manage ManagedSchedule, by, id string, paused bool, reason string, next time.Time) (*duet.Schedule, error) {
	s, err := manage(ctx, by, id)
	if err != nil {
		return nil, err
	}
	now := e.Now().Truncate(time.Microsecond)
	s.Paused, s.PausedReason, s.UpdatedAt = paused, reason, now
	if !paused {
		s.PausedReason, s.NextFireAt, s.LastError = "", next.Truncate(time.Microsecond), ""
	}
	if _, err := e.Exec(ctx, `UPDATE schedules SET paused = $1, paused_reason = $2, next_fire_at = $3, last_error = $4, updated_at = $5 WHERE id = $6`,
		s.Paused, s.PausedReason, e.Stored(s.NextFireAt), s.LastError, e.Stored(now), id); err != nil {
		return nil, err
	}
	return s, nil
}

// DeleteSchedule removes the schedule id, made by hand and managed by by,
// on e (the transaction manage reads in). Returns INVALID_ARGUMENT for a
// schedule its task's suite declares.
func DeleteSchedule(ctx context.Context, e Engine, manage ManagedSchedule, by, id string) error {
	s, err := manage(ctx, by, id)
	if err != nil {
		return err
	}
	if s.Source == duet.ScheduleFromSuite {
		return duet.Errorf(duet.CodeInvalidArgument, "schedule %q is declared in the task's suite: remove it from the suite and apply it, or pause it", s.Name)
	}
	_, err = e.Exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
	return err
}

// Schedules is the part of duet.ScheduleStore that is the same on every
// engine.
type Schedules struct{ E Engine }

// CreateSchedule stores a schedule of a task its owner may see, created
// now (to the microsecond). Returns INVALID_ARGUMENT, NOT_FOUND, CONFLICT.
func (s Schedules) CreateSchedule(ctx context.Context, sc *duet.Schedule) error {
	if err := ValidSchedule(sc); err != nil {
		return err
	}
	return s.E.Tx(ctx, func(tx Engine) error {
		var one int
		err := tx.Read(ctx, []any{&one}, `SELECT 1 FROM tasks t WHERE `+tx.VisibleTo+` AND t.id = $2`, sc.Owner, sc.TaskID)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("task", sc.TaskID)
		} else if err != nil {
			return err
		}
		return InsertSchedule(ctx, tx, sc, tx.Now().Truncate(time.Microsecond))
	})
}

// FindSchedules lists the schedules of the tasks the viewer may see.
// Returns INVALID_ARGUMENT without a viewer.
func (s Schedules) FindSchedules(ctx context.Context, f duet.ScheduleFilter) ([]*duet.Schedule, error) {
	if f.Viewer == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a viewer is required")
	}
	w := Filter{Args: []any{f.Viewer}}
	q := `SELECT ` + ScheduleColumns + ` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE ` + s.E.VisibleTo
	if f.TaskID != "" {
		q += ` AND s.task_id = ` + w.Add(f.TaskID)
	}
	if f.Owner != "" {
		q += ` AND s.owner = ` + w.Add(f.Owner)
	}
	return All(ctx, s.E, ScanSchedule, q+` ORDER BY t.name, s.task_id, s.name, s.owner`, w.Args...)
}
