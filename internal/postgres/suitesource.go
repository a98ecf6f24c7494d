package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
)

// saveSuiteSource keeps src as the source of task taskID, applied by
// owner at now, in the apply's transaction (ApplySuite); nil keeps the
// task's source as it is.
func saveSuiteSource(ctx context.Context, tx pgx.Tx, taskID, owner string, src *duet.SuiteSource, now time.Time) error {
	if src == nil {
		return nil
	}
	if len(src.Source) > duet.MaxSuiteSourceBytes {
		return duet.Errorf(duet.CodeTooLarge, "the suite's source is %d bytes; the limit is %d", len(src.Source), duet.MaxSuiteSourceBytes)
	}
	src.TaskID, src.AppliedBy, src.UpdatedAt = taskID, owner, ts(now)
	_, err := tx.Exec(ctx, `INSERT INTO suite_sources (task_id, name, source, applied_by, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (task_id) DO UPDATE SET name = excluded.name, source = excluded.source, applied_by = excluded.applied_by, updated_at = excluded.updated_at
		WHERE $6::timestamptz IS NULL OR suite_sources.updated_at = $6`,
		taskID, src.Name, src.Source, owner, ts(now), src.Replaces)
	return mapErr(err)
}

// FindSuiteSource implements duet.SuiteSourceStore.
func (d *DB) FindSuiteSource(ctx context.Context, taskID string) (*duet.SuiteSource, error) {
	s := &duet.SuiteSource{TaskID: taskID}
	err := d.pool.QueryRow(ctx, `SELECT name, source, applied_by, updated_at FROM suite_sources WHERE task_id = $1`, taskID).
		Scan(&s.Name, &s.Source, &s.AppliedBy, &s.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "task %s has no suite source kept", taskID)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	s.UpdatedAt = s.UpdatedAt.UTC()
	return s, nil
}
