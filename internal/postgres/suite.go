package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// ApplySuite creates or updates owner's task and its cases in one
// transaction (storerules.ApplySuite decides; suiteTx writes). Applies of
// the same task by several instances take turns (an advisory lock on owner
// and name). Returns INVALID_ARGUMENT.
func (d *DB) ApplySuite(ctx context.Context, owner string, s *duet.Suite) (*duet.ApplyResult, error) {
	if err := storerules.CheckSuite(owner, s); err != nil {
		return nil, err
	}
	var res *duet.ApplyResult
	err := d.tx(ctx, func(tx pgx.Tx) error {
		if err := lockKey(ctx, tx, "task\x1f"+owner+"\x1f"+s.Task.Name); err != nil {
			return err
		}
		var err error
		now := ts(d.now())
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

// suiteTx is storerules.SuiteTx on a PostgreSQL transaction.
type suiteTx struct{ tx pgx.Tx }

func (t suiteTx) exec(ctx context.Context, sql string, args ...any) error {
	_, err := t.tx.Exec(ctx, sql, args...)
	return mapErr(err)
}

func (t suiteTx) TaskByName(ctx context.Context, owner, name string) (*duet.Task, error) {
	return findTaskByName(ctx, t.tx, owner, name)
}

func (t suiteTx) InsertTask(ctx context.Context, task *duet.Task, postRun, runConfig string) error {
	return t.exec(ctx, `INSERT INTO tasks (id, owner, name, description, base_url, device, post_run, post_run_by, run_config, hooks_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		task.ID, task.Owner, task.Name, task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runConfig, task.HooksBy, task.CreatedAt, task.UpdatedAt)
}

func (t suiteTx) UpdateTask(ctx context.Context, task *duet.Task, postRun, runConfig string) error {
	return t.exec(ctx, `UPDATE tasks SET description = $1, base_url = $2, device = $3, post_run = $4, post_run_by = $5, run_config = $6, hooks_by = $7, updated_at = $8 WHERE id = $9`,
		task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runConfig, task.HooksBy, task.UpdatedAt, task.ID)
}

func (t suiteTx) SetTrace(ctx context.Context, task *duet.Task) error {
	return t.exec(ctx, `UPDATE tasks SET trace = $1, updated_at = $2 WHERE id = $3`, task.Trace, task.UpdatedAt, task.ID)
}

func (t suiteTx) SetShares(ctx context.Context, taskID string, users []string, now time.Time) error {
	return setShares(ctx, t.tx, taskID, users, now)
}

func (t suiteTx) Cases(ctx context.Context, taskID string) ([]*duet.Case, error) {
	return all(ctx, t.tx, storerules.ScanCase, `SELECT `+storerules.CaseFields+` FROM cases c WHERE c.task_id = $1`, taskID)
}

func (t suiteTx) CaseByKey(ctx context.Context, taskID, key string) (*duet.Case, error) {
	c, err := storerules.ScanCase(t.tx.QueryRow(ctx, `SELECT `+storerules.CaseFields+` FROM cases c WHERE c.task_id = $1 AND c.key = $2`, taskID, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return c, mapErr(err)
}

func (t suiteTx) InsertCase(ctx context.Context, c *duet.Case, w storerules.CaseColumns) error {
	return t.exec(ctx, insertCase,
		c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, w.Steps, c.TimeoutMs, c.Version, c.Status, c.CreatedBy, c.CreatedAt, c.UpdatedAt, w.Row, c.Retries, w.Tags)
}

func (t suiteTx) UpdateCase(ctx context.Context, c *duet.Case, w storerules.CaseColumns) error {
	return t.exec(ctx, `UPDATE cases SET title = $1, source = $2, source_hash = $3, steps = $4, timeout_ms = $5, version = $6, status = $7, created_by = $8, updated_at = $9, row = $10, retries = $12, tags = $13 WHERE id = $11`,
		c.Title, c.Source, c.SourceHash, w.Steps, c.TimeoutMs, c.Version, c.Status, c.CreatedBy, c.UpdatedAt, w.Row, c.ID, c.Retries, w.Tags)
}

func (t suiteTx) ArchiveCase(ctx context.Context, id string, now time.Time) error {
	return t.exec(ctx, `UPDATE cases SET status = $1, updated_at = $2 WHERE id = $3`, duet.CaseArchived, now, id)
}

func (t suiteTx) SuiteSchedules(ctx context.Context, owner, taskID string) ([]*duet.Schedule, error) {
	return all(ctx, t.tx, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules s WHERE s.task_id = $1 AND s.owner = $2 AND s.source = $3`, taskID, owner, duet.ScheduleFromSuite)
}

func (t suiteTx) InsertSchedule(ctx context.Context, s *duet.Schedule, now time.Time) error {
	return storerules.InsertSchedule(ctx, engineOf(t.tx), s, now)
}

func (t suiteTx) SetScheduleTags(ctx context.Context, id, tags string, now time.Time) error {
	return t.exec(ctx, `UPDATE schedules SET tags = $1, updated_at = $2 WHERE id = $3`, tags, now, id)
}

func (t suiteTx) SetScheduleTiming(ctx context.Context, id string, s *duet.Schedule, now time.Time) error {
	s.NextFireAt = ts(s.NextFireAt)
	return t.exec(ctx, `UPDATE schedules SET cron = $1, time_zone = $2, every_ms = $3, missed = $4, overlap = $5, next_fire_at = $6, updated_at = $7, tags = $9 WHERE id = $8`,
		s.Cron, s.TimeZone, s.Every.Milliseconds(), s.Missed, s.Overlap, s.NextFireAt, now, id, storerules.EncodeTags(s.Tags))
}

func (t suiteTx) DeleteSchedule(ctx context.Context, id string) error {
	return t.exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
}
