package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

const scheduleColumns = `s.id, s.task_id, s.owner, s.token_id, s.name, s.source, s.cron, s.time_zone, s.every_ms, s.missed, s.overlap,
	s.paused, s.paused_reason, s.next_fire_at, s.last_fire_at, s.last_run_id, s.last_error, s.created_at, s.updated_at, s.tags`

func scanSchedule(row rowScanner) (*duet.Schedule, error) {
	var s duet.Schedule
	var every int64
	var tags string
	if err := row.Scan(&s.ID, &s.TaskID, &s.Owner, &s.TokenID, &s.Name, &s.Source, &s.Cron, &s.TimeZone, &every, &s.Missed, &s.Overlap,
		&s.Paused, &s.PausedReason, &s.NextFireAt, &s.LastFireAt, &s.LastRunID, &s.LastError, &s.CreatedAt, &s.UpdatedAt, &tags); err != nil {
		return nil, err
	}
	if tags != "" {
		if err := json.Unmarshal([]byte(tags), &s.Tags); err != nil {
			return nil, fmt.Errorf("schedule %s: decoding its tags: %w", s.ID, err)
		}
	}
	s.Every = time.Duration(every) * time.Millisecond
	s.NextFireAt, s.LastFireAt, s.CreatedAt, s.UpdatedAt = utc(s.NextFireAt), utcPtr(s.LastFireAt), utc(s.CreatedAt), utc(s.UpdatedAt)
	return &s, nil
}

func insertSchedule(ctx context.Context, q querier, s *duet.Schedule, now time.Time) error {
	s.ID, s.CreatedAt, s.UpdatedAt, s.NextFireAt = duet.NewID("sched"), now, now, ts(s.NextFireAt)
	_, err := q.Exec(ctx, `INSERT INTO schedules (id, task_id, owner, token_id, name, source, cron, time_zone, every_ms, missed, overlap, paused, paused_reason, next_fire_at, created_at, updated_at, tags)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16)`,
		s.ID, s.TaskID, s.Owner, s.TokenID, s.Name, s.Source, s.Cron, s.TimeZone, s.Every.Milliseconds(), s.Missed, s.Overlap, s.Paused, s.PausedReason,
		s.NextFireAt, now, storerules.EncodeTags(s.Tags))
	if duet.ErrorCode(mapErr(err)) == duet.CodeConflict {
		return duet.Errorf(duet.CodeConflict, "%s already has a schedule named %q on this task", s.Owner, s.Name)
	}
	return mapErr(err)
}

// CreateSchedule stores a schedule of a task its owner can see.
func (d *DB) CreateSchedule(ctx context.Context, s *duet.Schedule) error {
	if err := storerules.ValidSchedule(s); err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM tasks t WHERE t.id = $2 AND `+visibleTo, s.Owner, s.TaskID).Scan(&one)
		if err != nil {
			return found(err, "task", s.TaskID)
		}
		return insertSchedule(ctx, tx, s, ts(d.now()))
	})
}

// FindScheduleByID returns a schedule of a task viewer may see.
func (d *DB) FindScheduleByID(ctx context.Context, viewer, id string) (*duet.Schedule, error) {
	q := `SELECT ` + scheduleColumns + ` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE s.id = $2` + visibility(viewer)
	s, err := scanSchedule(d.pool.QueryRow(ctx, q, viewer, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storerules.NotFound("schedule", id)
	}
	return s, mapErr(err)
}

// FindSchedules lists the schedules of the tasks the viewer may see.
func (d *DB) FindSchedules(ctx context.Context, f duet.ScheduleFilter) ([]*duet.Schedule, error) {
	if f.Viewer == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a viewer is required")
	}
	q, args := schedulesQuery(f)
	rows, err := d.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, scanSchedule)
	return out, mapErr(err)
}

// schedulesQuery is the statement of FindSchedules.
func schedulesQuery(f duet.ScheduleFilter) (string, []any) {
	q := `SELECT ` + scheduleColumns + ` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE ` + visibleTo
	args := []any{f.Viewer}
	if f.TaskID != "" {
		args = append(args, f.TaskID)
		q += ` AND s.task_id = $2`
	}
	if f.Owner != "" {
		args = append(args, f.Owner)
		q += ` AND s.owner = $` + strconv.Itoa(len(args))
	}
	return q + ` ORDER BY t.name, s.task_id, s.name, s.owner`, args
}

// DueSchedules lists the unpaused schedules due at now.
func (d *DB) DueSchedules(ctx context.Context, now time.Time, limit int) ([]*duet.Schedule, time.Time, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := d.pool.Query(ctx, `SELECT `+scheduleColumns+` FROM schedules s WHERE NOT s.paused AND s.next_fire_at <= $1 ORDER BY s.next_fire_at, s.id LIMIT $2`, ts(now), limit)
	if err != nil {
		return nil, time.Time{}, mapErr(err)
	}
	due, err := collect(rows, scanSchedule)
	if err != nil {
		return nil, time.Time{}, mapErr(err)
	}
	var earliest *time.Time
	if err := d.pool.QueryRow(ctx, `SELECT min(next_fire_at) FROM schedules WHERE NOT paused`).Scan(&earliest); err != nil {
		return nil, time.Time{}, mapErr(err)
	}
	if earliest == nil {
		return due, time.Time{}, nil
	}
	return due, utc(*earliest), nil
}

// mayManage is the condition that $1 owns the schedule s or its task t.
const mayManage = `(s.owner = $1 OR t.owner = $1 OR t.owner IN ` + teamsOf + `)`

func manage(ctx context.Context, tx pgx.Tx, by, id string) (*duet.Schedule, error) {
	s, err := scanSchedule(tx.QueryRow(ctx, `SELECT `+scheduleColumns+` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE s.id = $2 AND `+visibleTo+` FOR UPDATE OF s`, by, id))
	if err != nil {
		return nil, found(err, "schedule", id)
	}
	var may bool
	if err := tx.QueryRow(ctx, `SELECT `+mayManage+` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE s.id = $2`, by, id).Scan(&may); err != nil {
		return nil, mapErr(err)
	}
	if !may {
		return nil, duet.Errorf(duet.CodePermissionDenied, "only %s (its owner) or the task's owner may change schedule %s", s.Owner, id)
	}
	return s, nil
}

// SetSchedulePaused pauses or resumes a schedule.
func (d *DB) SetSchedulePaused(ctx context.Context, by, id string, paused bool, reason string, next time.Time) (*duet.Schedule, error) {
	var out *duet.Schedule
	err := d.tx(ctx, func(tx pgx.Tx) error {
		s, err := manage(ctx, tx, by, id)
		if err != nil {
			return err
		}
		now := ts(d.now())
		s.Paused, s.PausedReason, s.UpdatedAt = paused, reason, now
		if !paused {
			s.PausedReason, s.NextFireAt, s.LastError = "", ts(next), ""
		}
		if _, err := tx.Exec(ctx, `UPDATE schedules SET paused = $1, paused_reason = $2, next_fire_at = $3, last_error = $4, updated_at = $5 WHERE id = $6`,
			s.Paused, s.PausedReason, s.NextFireAt, s.LastError, now, id); err != nil {
			return mapErr(err)
		}
		out = s
		return nil
	})
	return out, err
}

// PauseScheduleFor pauses a schedule on Duet's account if its slot is
// still slot.
func (d *DB) PauseScheduleFor(ctx context.Context, id string, slot time.Time, reason string) (bool, error) {
	if reason == "" {
		return false, duet.Errorf(duet.CodeInvalidArgument, "a reason is required")
	}
	tag, err := d.pool.Exec(ctx, `UPDATE schedules SET paused = TRUE, paused_reason = $1, updated_at = $2 WHERE id = $3 AND next_fire_at = $4 AND NOT paused`,
		reason, ts(d.now()), id, ts(slot))
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// AdvanceSchedule moves a schedule past a slot that starts no run.
func (d *DB) AdvanceSchedule(ctx context.Context, f duet.ScheduleFire, lastError string) (bool, error) {
	tag, err := d.pool.Exec(ctx, `UPDATE schedules SET next_fire_at = $1, last_error = $2, updated_at = $3 WHERE id = $4 AND next_fire_at = $5 AND NOT paused`,
		ts(f.Next), lastError, ts(d.now()), f.ScheduleID, ts(f.Slot))
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// DeleteSchedule removes a schedule made by hand.
func (d *DB) DeleteSchedule(ctx context.Context, by, id string) error {
	return d.tx(ctx, func(tx pgx.Tx) error {
		s, err := manage(ctx, tx, by, id)
		if err != nil {
			return err
		}
		if s.Source == duet.ScheduleFromSuite {
			return duet.Errorf(duet.CodeInvalidArgument, "schedule %q is declared in the task's suite: remove it from the suite and apply it, or pause it", s.Name)
		}
		_, err = tx.Exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
		return mapErr(err)
	})
}
