package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
)

// saveSuiteSource keeps src as the source of task taskID, applied by
// owner at now, in the apply's transaction (ApplySuite); nil keeps the
// task's source as it is.
func saveSuiteSource(ctx context.Context, tx *cachedTx, taskID, owner string, src *duet.SuiteSource, now time.Time) error {
	if src == nil {
		return nil
	}
	if len(src.Source) > duet.MaxSuiteSourceBytes {
		return duet.Errorf(duet.CodeTooLarge, "the suite's source is %d bytes; the limit is %d", len(src.Source), duet.MaxSuiteSourceBytes)
	}
	src.TaskID, src.AppliedBy, src.UpdatedAt = taskID, owner, now
	_, err := tx.ExecContext(ctx, `INSERT INTO suite_sources (task_id, name, source, applied_by, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET name = excluded.name, source = excluded.source, applied_by = excluded.applied_by, updated_at = excluded.updated_at
		WHERE ? IS NULL OR suite_sources.updated_at = ?`,
		taskID, src.Name, src.Source, owner, micros(now), replaces(src), replaces(src))
	return mapErr(err)
}

// replaces is src.Replaces as stored (nil: replace whatever is kept).
func replaces(src *duet.SuiteSource) any {
	if src.Replaces == nil {
		return nil
	}
	return micros(*src.Replaces)
}

// FindSuiteSource implements duet.SuiteSourceStore.
func (d *DB) FindSuiteSource(ctx context.Context, taskID string) (*duet.SuiteSource, error) {
	s := &duet.SuiteSource{TaskID: taskID}
	var at int64
	err := d.q.QueryRowContext(ctx, `SELECT name, source, applied_by, updated_at FROM suite_sources WHERE task_id = ?`, taskID).
		Scan(&s.Name, &s.Source, &s.AppliedBy, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "task %s has no suite source kept", taskID)
	}
	if err != nil {
		return nil, mapErr(err)
	}
	s.UpdatedAt = fromMicros(at)
	return s, nil
}
