package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// scheduleColumns and scanSchedule read a schedule (storerules): task.go
// reads a task's schedules with them too.
const scheduleColumns = storerules.ScheduleColumns

var scanSchedule = storerules.ScanSchedule

// FindScheduleByID returns a schedule of a task viewer may see.
func (d *DB) FindScheduleByID(ctx context.Context, viewer, id string) (*duet.Schedule, error) {
	q := `SELECT ` + scheduleColumns + ` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE s.id = $2` + visibility(viewer)
	s, err := scanSchedule(d.pool.QueryRow(ctx, q, viewer, id))
	return s, found(err, "schedule", id)
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

// managing is storerules.ManagedSchedule in tx: the schedule is locked.
func managing(tx pgx.Tx) storerules.ManagedSchedule {
	return func(ctx context.Context, by, id string) (*duet.Schedule, error) { return manage(ctx, tx, by, id) }
}

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
	return storerules.TxValue(ctx, d.tx, func(tx pgx.Tx) (*duet.Schedule, error) {
		return storerules.SetSchedulePaused(ctx, d.engineOn(tx), managing(tx), by, id, paused, reason, next)
	})
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
		return storerules.DeleteSchedule(ctx, d.engineOn(tx), managing(tx), by, id)
	})
}
