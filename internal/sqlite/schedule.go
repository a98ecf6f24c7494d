package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// FindScheduleByID returns a schedule of a task viewer may see.
func (d *DB) FindScheduleByID(ctx context.Context, viewer, id string) (*duet.Schedule, error) {
	q := `SELECT ` + storerules.ScheduleColumns + ` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE s.id = ?2` + visibility(viewer)
	s, err := storerules.ScanSchedule(d.q.QueryRowContext(ctx, q, viewer, id))
	return s, found(err, "schedule", id)
}

// DueSchedules lists the unpaused schedules due at now.
func (d *DB) DueSchedules(ctx context.Context, now time.Time, limit int) ([]*duet.Schedule, time.Time, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := d.q.QueryContext(ctx, `SELECT `+storerules.ScheduleColumns+` FROM schedules s WHERE s.paused = 0 AND s.next_fire_at <= ? ORDER BY s.next_fire_at, s.id LIMIT ?`, micros(now), limit)
	if err != nil {
		return nil, time.Time{}, mapErr(err)
	}
	due, err := collect(rows, storerules.ScanSchedule)
	if err != nil {
		return nil, time.Time{}, err
	}
	var earliest sql.NullInt64
	if err := d.q.QueryRowContext(ctx, `SELECT min(next_fire_at) FROM schedules WHERE paused = 0`).Scan(&earliest); err != nil {
		return nil, time.Time{}, mapErr(err)
	}
	if !earliest.Valid {
		return due, time.Time{}, nil
	}
	return due, fromMicros(earliest.Int64), nil
}

// mayManage is the condition that ?1 owns the schedule s or its task t.
const mayManage = `(s.owner = ?1 OR t.owner = ?1 OR t.owner IN ` + teamsOf + `)`

// managing is storerules.ManagedSchedule in tx.
func managing(tx *cachedTx) storerules.ManagedSchedule {
	return func(ctx context.Context, by, id string) (*duet.Schedule, error) { return manage(ctx, tx, by, id) }
}

func manage(ctx context.Context, tx *cachedTx, by, id string) (*duet.Schedule, error) {
	var may bool
	s, err := storerules.ScanSchedule(tx.QueryRowContext(ctx, `SELECT `+storerules.ScheduleColumns+` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE s.id = ?2 AND `+visibleTo, by, id))
	if err != nil {
		return nil, found(err, "schedule", id)
	}
	if err := tx.QueryRowContext(ctx, `SELECT `+mayManage+` FROM schedules s JOIN tasks t ON t.id = s.task_id WHERE s.id = ?2`, by, id).Scan(&may); err != nil {
		return nil, mapErr(err)
	}
	if !may {
		return nil, duet.Errorf(duet.CodePermissionDenied, "only %s (its owner) or the task's owner may change schedule %s", s.Owner, id)
	}
	return s, nil
}

// SetSchedulePaused pauses or resumes a schedule.
func (d *DB) SetSchedulePaused(ctx context.Context, by, id string, paused bool, reason string, next time.Time) (*duet.Schedule, error) {
	return storerules.TxValue(ctx, d.tx, func(tx *cachedTx) (*duet.Schedule, error) {
		return storerules.SetSchedulePaused(ctx, d.engineOn(tx), managing(tx), by, id, paused, reason, next)
	})
}

// PauseScheduleFor pauses a schedule on Duet's account if its slot is
// still slot.
func (d *DB) PauseScheduleFor(ctx context.Context, id string, slot time.Time, reason string) (bool, error) {
	if reason == "" {
		return false, duet.Errorf(duet.CodeInvalidArgument, "a reason is required")
	}
	return d.writeOne(ctx, `UPDATE schedules SET paused = 1, paused_reason = ?, updated_at = ? WHERE id = ? AND next_fire_at = ? AND paused = 0`,
		reason, micros(d.now()), id, micros(slot))
}

// AdvanceSchedule moves a schedule past a slot that starts no run.
func (d *DB) AdvanceSchedule(ctx context.Context, f duet.ScheduleFire, lastError string) (bool, error) {
	return d.writeOne(ctx, `UPDATE schedules SET next_fire_at = ?, last_error = ?, updated_at = ? WHERE id = ? AND next_fire_at = ? AND paused = 0`,
		micros(f.Next), lastError, micros(d.now()), f.ScheduleID, micros(f.Slot))
}

// writeOne runs a write in a transaction (tx) and reports whether it
// changed exactly one row.
func (d *DB) writeOne(ctx context.Context, q string, args ...any) (bool, error) {
	var ok bool
	err := d.tx(ctx, func(tx *cachedTx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return mapErr(err)
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return mapErr(err)
	})
	return ok, err
}

// claimSlot is the claim of a schedule's slot, the first statement of the
// transaction that creates its run (runID, chosen by storerules.PlanRun): CONFLICT,
// creating nothing, when another scheduler moved the slot first (or the
// schedule was paused meanwhile).
func claimSlot(ctx context.Context, tx *cachedTx, f *duet.ScheduleFire, runID string, now time.Time) error {
	if f == nil {
		return nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE schedules SET next_fire_at = ?, last_fire_at = ?, last_run_id = ?, last_error = '', updated_at = ? WHERE id = ? AND next_fire_at = ? AND paused = 0`,
		micros(f.Next), micros(f.RunSlot), runID, micros(now), f.ScheduleID, micros(f.Slot))
	if err != nil {
		return mapErr(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return mapErr(err)
	} else if n != 1 {
		return storerules.SlotTaken(f)
	}
	return nil
}

// DeleteSchedule removes a schedule made by hand.
func (d *DB) DeleteSchedule(ctx context.Context, by, id string) error {
	return d.tx(ctx, func(tx *cachedTx) error {
		return storerules.DeleteSchedule(ctx, d.engineOn(tx), managing(tx), by, id)
	})
}
