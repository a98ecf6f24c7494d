package storerules

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
)

// SuiteRows is the part of SuiteTx and DraftTx that is the same on every
// engine, on an Engine whose statements run in the transaction.
type SuiteRows struct{ E Engine }

func (t SuiteRows) exec(ctx context.Context, query string, args ...any) error {
	_, err := t.E.Exec(ctx, query, args...)
	return err
}

// TaskByName reads owner's task named name with its shares (TaskByName).
func (t SuiteRows) TaskByName(ctx context.Context, owner, name string) (*duet.Task, error) {
	return TaskByName(ctx, t.E, owner, name)
}

// InsertTask writes a new task (not its shares).
func (t SuiteRows) InsertTask(ctx context.Context, task *duet.Task, postRun, runConfig string) error {
	return t.exec(ctx, `INSERT INTO tasks (id, owner, name, description, base_url, device, post_run, post_run_by, run_config, hooks_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		task.ID, task.Owner, task.Name, task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runConfig, task.HooksBy, t.E.Stored(task.CreatedAt), t.E.Stored(task.UpdatedAt))
}

// UpdateTask writes a task's settings.
func (t SuiteRows) UpdateTask(ctx context.Context, task *duet.Task, postRun, runConfig string) error {
	return t.exec(ctx, `UPDATE tasks SET description = $1, base_url = $2, device = $3, post_run = $4, post_run_by = $5, run_config = $6, hooks_by = $7, updated_at = $8 WHERE id = $9`,
		task.Description, task.BaseURL, task.Device, postRun, task.PostRunBy, runConfig, task.HooksBy, t.E.Stored(task.UpdatedAt), task.ID)
}

// SetTrace writes a task's trace setting.
func (t SuiteRows) SetTrace(ctx context.Context, task *duet.Task) error {
	return t.exec(ctx, `UPDATE tasks SET trace = $1, updated_at = $2 WHERE id = $3`, task.Trace, t.E.Stored(task.UpdatedAt), task.ID)
}

// Cases reads every case of a task.
func (t SuiteRows) Cases(ctx context.Context, taskID string) ([]*duet.Case, error) {
	return All(ctx, t.E, ScanCase, `SELECT `+CaseFields+` FROM cases c WHERE c.task_id = $1`, taskID)
}

// CaseByKey reads the task's case with that key, or nil.
func (t SuiteRows) CaseByKey(ctx context.Context, taskID, key string) (*duet.Case, error) {
	c, err := One(ctx, t.E, ScanCase, `SELECT `+CaseFields+` FROM cases c WHERE c.task_id = $1 AND c.key = $2`, taskID, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return c, err
}

// InsertCase writes a new case.
func (t SuiteRows) InsertCase(ctx context.Context, c *duet.Case, w CaseColumns) error {
	return t.exec(ctx, `INSERT INTO cases (id, task_id, key, title, source, source_hash, steps, timeout_ms, version, status, created_by, created_at, updated_at, row, retries, tags)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		c.ID, c.TaskID, c.Key, c.Title, c.Source, c.SourceHash, w.Steps, c.TimeoutMs, c.Version, c.Status, c.CreatedBy, t.E.Stored(c.CreatedAt), t.E.Stored(c.UpdatedAt), w.Row, c.Retries, w.Tags)
}

// UpdateCase writes a case's new version.
func (t SuiteRows) UpdateCase(ctx context.Context, c *duet.Case, w CaseColumns) error {
	return t.exec(ctx, `UPDATE cases SET title = $1, source = $2, source_hash = $3, steps = $4, timeout_ms = $5, version = $6, status = $7, created_by = $8, updated_at = $9, row = $10, retries = $12, tags = $13 WHERE id = $11`,
		c.Title, c.Source, c.SourceHash, w.Steps, c.TimeoutMs, c.Version, c.Status, c.CreatedBy, t.E.Stored(c.UpdatedAt), w.Row, c.ID, c.Retries, w.Tags)
}

// ArchiveCase archives a case.
func (t SuiteRows) ArchiveCase(ctx context.Context, id string, now time.Time) error {
	return t.exec(ctx, `UPDATE cases SET status = $1, updated_at = $2 WHERE id = $3`, duet.CaseArchived, t.E.Stored(now), id)
}

// InsertSchedule writes a new schedule (InsertSchedule).
func (t SuiteRows) InsertSchedule(ctx context.Context, s *duet.Schedule, now time.Time) error {
	return InsertSchedule(ctx, t.E, s, now)
}

// SetScheduleTags writes a schedule's tags.
func (t SuiteRows) SetScheduleTags(ctx context.Context, id, tags string, now time.Time) error {
	return t.exec(ctx, `UPDATE schedules SET tags = $1, updated_at = $2 WHERE id = $3`, tags, t.E.Stored(now), id)
}

// SetScheduleTiming writes a schedule's timing and tags, its next firing
// at the precision kept.
func (t SuiteRows) SetScheduleTiming(ctx context.Context, id string, s *duet.Schedule, now time.Time) error {
	s.NextFireAt = s.NextFireAt.Truncate(time.Microsecond)
	return t.exec(ctx, `UPDATE schedules SET cron = $1, time_zone = $2, every_ms = $3, missed = $4, overlap = $5, next_fire_at = $6, updated_at = $7, tags = $9 WHERE id = $8`,
		s.Cron, s.TimeZone, s.Every.Milliseconds(), s.Missed, s.Overlap, t.E.Stored(s.NextFireAt), t.E.Stored(now), id, EncodeTags(s.Tags))
}

// DeleteSchedule removes a schedule.
func (t SuiteRows) DeleteSchedule(ctx context.Context, id string) error {
	return t.exec(ctx, `DELETE FROM schedules WHERE id = $1`, id)
}

// SaveCaseVersion keeps the version of case c that was just saved.
func SaveCaseVersion(ctx context.Context, e Engine, c *duet.Case, via duet.CaseSaveVia) error {
	_, err := e.Exec(ctx, `INSERT INTO case_versions (case_id, version, title, source, source_hash, saved_by, saved_at, via) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.ID, c.Version, c.Title, c.Source, c.SourceHash, c.CreatedBy, e.Stored(c.UpdatedAt), string(via))
	return err
}

// SaveCaseVersions keeps the version of each case of suite s that its
// apply (res) created or changed, in the apply's transaction.
func SaveCaseVersions(ctx context.Context, e Engine, s *duet.Suite, res *duet.ApplyResult) error {
	for _, c := range SavedCases(s, res) {
		if err := SaveCaseVersion(ctx, e, c, SuiteVia(s)); err != nil {
			return err
		}
	}
	return nil
}
