package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// ApplySuite creates or updates owner's task and its cases in one
// transaction (storerules.ApplySuite decides; suiteTx writes).
func (d *DB) ApplySuite(ctx context.Context, owner string, s *duet.Suite) (*duet.ApplyResult, error) {
	if err := storerules.CheckSuite(owner, s); err != nil {
		return nil, err
	}
	var res *duet.ApplyResult
	err := d.tx(ctx, func(tx *cachedTx) error {
		var err error
		now := d.now()
		if res, err = storerules.ApplySuite(ctx, suiteTx{tx}, owner, s, now); err != nil {
			return err
		}
		if err := saveCaseVersions(ctx, tx, s, res); err != nil { // caseversion.go
			return err
		}
		return saveSuiteSource(ctx, tx, res.Task.ID, owner, s.Source, now) // suitesource.go
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// suiteTx is storerules.SuiteTx on a SQLite transaction.
type suiteTx struct{ tx *cachedTx }

func (t suiteTx) TaskByName(ctx context.Context, owner, name string) (*duet.Task, error) {
	return findTaskByName(ctx, t.tx, owner, name)
}

func (t suiteTx) InsertTask(ctx context.Context, task *duet.Task, postRun, runConfig string) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO tasks (id, owner, name, description, base_url, device, post_run, post_run_by, run_config, hooks_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		task.ID, task.Owner, task.Name, task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runConfig, task.HooksBy, micros(task.CreatedAt), micros(task.UpdatedAt))
	return mapErr(err)
}

func (t suiteTx) UpdateTask(ctx context.Context, task *duet.Task, postRun, runConfig string) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE tasks SET description = ?, base_url = ?, device = ?, post_run = ?, post_run_by = ?, run_config = ?, hooks_by = ?, updated_at = ? WHERE id = ?`,
		task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runConfig, task.HooksBy, micros(task.UpdatedAt), task.ID)
	return mapErr(err)
}

func (t suiteTx) SetTrace(ctx context.Context, task *duet.Task) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE tasks SET trace = ?, updated_at = ? WHERE id = ?`, task.Trace, micros(task.UpdatedAt), task.ID)
	return mapErr(err)
}

func (t suiteTx) SetShares(ctx context.Context, taskID string, users []string, now time.Time) error {
	return setShares(ctx, t.tx, taskID, users, micros(now))
}

func (t suiteTx) Cases(ctx context.Context, taskID string) ([]*duet.Case, error) {
	return all(ctx, t.tx, storerules.ScanCase, `SELECT `+storerules.CaseFields+` FROM cases c WHERE c.task_id = ?`, taskID)
}

func (t suiteTx) CaseByKey(ctx context.Context, taskID, key string) (*duet.Case, error) {
	c, err := storerules.ScanCase(t.tx.QueryRowContext(ctx, `SELECT `+storerules.CaseFields+` FROM cases c WHERE c.task_id = ? AND c.key = ?`, taskID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return c, mapErr(err)
}

func (t suiteTx) InsertCase(ctx context.Context, c *duet.Case, w storerules.CaseColumns) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO cases (id, task_id, key, title, source, source_hash, steps, timeout_ms, version, status, created_by, created_at, updated_at, row, retries, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, w.Steps, c.TimeoutMs, c.Version, c.Status, c.CreatedBy, micros(c.CreatedAt), micros(c.UpdatedAt), w.Row, c.Retries, w.Tags)
	return mapErr(err)
}

func (t suiteTx) UpdateCase(ctx context.Context, c *duet.Case, w storerules.CaseColumns) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE cases SET title = ?, source = ?, source_hash = ?, steps = ?, timeout_ms = ?, version = ?, status = ?, created_by = ?, updated_at = ?, row = ?, retries = ?, tags = ? WHERE id = ?`,
		c.Title, c.Source, c.SourceHash, w.Steps, c.TimeoutMs, c.Version, c.Status, c.CreatedBy, micros(c.UpdatedAt), w.Row, c.Retries, w.Tags, c.ID)
	return mapErr(err)
}

func (t suiteTx) ArchiveCase(ctx context.Context, id string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE cases SET status = ?, updated_at = ? WHERE id = ?`, duet.CaseArchived, micros(now), id)
	return mapErr(err)
}

func (t suiteTx) SuiteSchedules(ctx context.Context, owner, taskID string) ([]*duet.Schedule, error) {
	return all(ctx, t.tx, storerules.ScanSchedule, `SELECT `+storerules.ScheduleColumns+` FROM schedules s WHERE s.task_id = ? AND s.owner = ? AND s.source = ?`, taskID, owner, duet.ScheduleFromSuite)
}

func (t suiteTx) InsertSchedule(ctx context.Context, s *duet.Schedule, now time.Time) error {
	return storerules.InsertSchedule(ctx, engineOf(t.tx), s, now)
}

func (t suiteTx) SetScheduleTags(ctx context.Context, id, tags string, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE schedules SET tags = ?, updated_at = ? WHERE id = ?`, tags, micros(now), id)
	return mapErr(err)
}

func (t suiteTx) SetScheduleTiming(ctx context.Context, id string, s *duet.Schedule, now time.Time) error {
	_, err := t.tx.ExecContext(ctx, `UPDATE schedules SET cron = ?, time_zone = ?, every_ms = ?, missed = ?, overlap = ?, next_fire_at = ?, updated_at = ?, tags = ? WHERE id = ?`,
		s.Cron, s.TimeZone, s.Every.Milliseconds(), s.Missed, s.Overlap, micros(s.NextFireAt), micros(now), storerules.EncodeTags(s.Tags), id)
	return mapErr(err)
}

func (t suiteTx) DeleteSchedule(ctx context.Context, id string) error {
	_, err := t.tx.ExecContext(ctx, `DELETE FROM schedules WHERE id = ?`, id)
	return mapErr(err)
}
