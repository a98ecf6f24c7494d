package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var (
	_ duet.BaselineStore = (*DB)(nil)
	_ duet.MetricStore   = (*DB)(nil)
)

const baselineColumns = `b.id, b.task_id, b.case_id, b.case_key, b.case_version, b.name, b.device, b.environment, b.owner, b.fingerprint,
	b.version, b.status, b.sha256, b.width, b.height, b.run_id, b.execution_id, b.step_index, b.diff_ratio, b.created_at, b.decided_by, b.decided_at`

func scanBaseline(r rowScanner, image bool) (*duet.Baseline, error) {
	var b duet.Baseline
	var created int64
	var decided sql.NullInt64
	var ratio sql.NullFloat64
	dest := []any{&b.ID, &b.TaskID, &b.CaseID, &b.CaseKey, &b.CaseVersion, &b.Name, &b.Device, &b.Environment, &b.Owner, &b.Fingerprint,
		&b.Version, &b.Status, &b.SHA256, &b.Width, &b.Height, &b.RunID, &b.ExecutionID, &b.StepIndex, &ratio, &created, &b.DecidedBy, &decided}
	if image {
		dest = append(dest, &b.Image)
	}
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	b.CreatedAt, b.DecidedAt = fromMicros(created), ptrTime(decided)
	if ratio.Valid {
		b.DiffRatio = &ratio.Float64
	}
	return &b, nil
}

// CreateBaseline stores b as the next version of its key, fenced by the
// lease l on the run that recorded it. Returns INVALID_ARGUMENT,
// LEASE_LOST.
func (d *DB) CreateBaseline(ctx context.Context, l duet.Lease, b *duet.Baseline) error {
	if err := storerules.CheckBaseline(l, b); err != nil {
		return err
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		if err := held(ctx, tx, l, b.ExecutionID); err != nil {
			return err
		}
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM baselines WHERE task_id = ? AND case_id = ? AND name = ? AND device = ? AND environment = ? AND owner = ?`,
			b.TaskID, b.CaseID, b.Name, b.Device, b.Environment, b.Owner).Scan(&last); err != nil {
			return mapErr(err)
		}
		b.ID, b.Version, b.CreatedAt = duet.NewID("base"), int(last.Int64)+1, d.now()
		var ratio any
		if b.DiffRatio != nil {
			ratio = *b.DiffRatio
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO baselines (id, task_id, case_id, case_key, case_version, name, device, environment, owner, fingerprint,
			version, status, image, sha256, width, height, run_id, execution_id, step_index, diff_ratio, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.ID, b.TaskID, b.CaseID, b.CaseKey, b.CaseVersion, b.Name, b.Device, b.Environment, b.Owner, b.Fingerprint,
			b.Version, b.Status, b.Image, b.SHA256, b.Width, b.Height, b.RunID, b.ExecutionID, b.StepIndex, ratio, micros(b.CreatedAt))
		return mapErr(err)
	})
}

// FindCurrentBaseline returns the newest approved baseline of key at
// fingerprint, else its newest first recording awaiting approval (never a
// candidate recorded because a screenshot differed), with its image.
// Returns NOT_FOUND.
func (d *DB) FindCurrentBaseline(ctx context.Context, key duet.BaselineKey, fingerprint string) (*duet.Baseline, error) {
	b, err := scanBaseline(d.q.QueryRowContext(ctx, `SELECT `+baselineColumns+`, b.image FROM baselines b
		WHERE b.task_id = ? AND b.case_id = ? AND b.name = ? AND b.device = ? AND b.environment = ? AND b.owner = ? AND b.fingerprint = ?
		AND (b.status = 'approved' OR (b.status = 'pending' AND b.diff_ratio IS NULL))
		ORDER BY b.status = 'approved' DESC, b.version DESC LIMIT 1`,
		key.TaskID, key.CaseID, key.Name, key.Device, key.Environment, key.Owner, fingerprint), true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "no baseline of %s", key.Name)
	}
	return b, mapErr(err)
}

// FindBaseline returns owner's baseline id with its image. Returns
// NOT_FOUND.
func (d *DB) FindBaseline(ctx context.Context, owner, id string) (*duet.Baseline, error) {
	b, err := scanBaseline(d.q.QueryRowContext(ctx, `SELECT `+baselineColumns+`, b.image FROM baselines b WHERE b.id = ? AND b.owner = ?`, id, owner), true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storerules.NotFound("baseline", id)
	}
	return b, mapErr(err)
}

// FindBaselines returns the filter's baselines, newest first, without
// images.
func (d *DB) FindBaselines(ctx context.Context, f duet.BaselineFilter) ([]*duet.Baseline, error) {
	if f.Owner == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "listing baselines needs their owner")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + baselineColumns + ` FROM baselines b WHERE b.owner = ?`
	args := []any{f.Owner}
	if f.TaskID != "" {
		q += ` AND b.task_id = ?`
		args = append(args, f.TaskID)
	}
	if f.Status != "" {
		q += ` AND b.status = ?`
		args = append(args, f.Status)
	}
	q += ` ORDER BY b.created_at DESC, b.id DESC LIMIT ?`
	args = append(args, min(limit, 1000))
	return all(ctx, d.q, func(r rowScanner) (*duet.Baseline, error) { return scanBaseline(r, false) }, q, args...)
}

// DecideBaseline approves or rejects owner's pending baseline id. Returns
// NOT_FOUND, CONFLICT, INVALID_ARGUMENT.
func (d *DB) DecideBaseline(ctx context.Context, owner, id string, status duet.BaselineStatus) (*duet.Baseline, error) {
	if status != duet.BaselineApproved && status != duet.BaselineRejected {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a baseline is approved or rejected, not %q", status)
	}
	var out *duet.Baseline
	err := d.tx(ctx, func(tx *sql.Tx) error {
		b, err := scanBaseline(tx.QueryRowContext(ctx, `SELECT `+baselineColumns+` FROM baselines b WHERE b.id = ? AND b.owner = ?`, id, owner), false)
		if err != nil {
			return found(err, "baseline", id)
		}
		if b.Status != duet.BaselinePending {
			return duet.Errorf(duet.CodeConflict, "baseline %s was already %s by %s", id, b.Status, b.DecidedBy)
		}
		now := d.now()
		if _, err := tx.ExecContext(ctx, `UPDATE baselines SET status = ?, decided_by = ?, decided_at = ? WHERE id = ?`, status, owner, micros(now), id); err != nil {
			return mapErr(err)
		}
		b.Status, b.DecidedBy, b.DecidedAt = status, owner, &now
		out = b
		return nil
	})
	return out, err
}

// SaveMetrics stores page-speed values under the lease l, replacing those of the same
// execution, step and name.
func (d *DB) SaveMetrics(ctx context.Context, l duet.Lease, ms []*duet.Metric) error {
	if len(ms) == 0 {
		return nil
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		fenced := map[string]bool{}
		for _, m := range ms {
			if m.RunID != l.RunID {
				return duet.LeaseLost(l)
			}
			if !fenced[m.ExecutionID] {
				if err := held(ctx, tx, l, m.ExecutionID); err != nil {
					return err
				}
				fenced[m.ExecutionID] = true
			}
			if m.CreatedAt.IsZero() {
				m.CreatedAt = d.now()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO run_metrics (run_id, execution_id, task_id, case_key, step_index, name, value, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (execution_id, step_index, name) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`,
				m.RunID, m.ExecutionID, m.TaskID, m.CaseKey, m.StepIndex, m.Name, m.Value, micros(m.CreatedAt)); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
}

// FindMetrics returns the values the runs measured.
func (d *DB) FindMetrics(ctx context.Context, runIDs []string) ([]*duet.Metric, error) {
	out := []*duet.Metric{}
	if len(runIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(runIDs))
	for i, id := range runIDs {
		args[i] = id
	}
	rows, err := d.q.QueryContext(ctx, `SELECT run_id, execution_id, task_id, case_key, step_index, name, value, created_at FROM run_metrics
		WHERE run_id IN (?`+strings.Repeat(", ?", len(runIDs)-1)+`) ORDER BY created_at, execution_id, step_index, name`, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, func(r rowScanner) (*duet.Metric, error) {
		var m duet.Metric
		var at int64
		if err := r.Scan(&m.RunID, &m.ExecutionID, &m.TaskID, &m.CaseKey, &m.StepIndex, &m.Name, &m.Value, &at); err != nil {
			return nil, err
		}
		m.CreatedAt = fromMicros(at)
		return &m, nil
	})
}
