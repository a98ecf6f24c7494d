package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var (
	_ duet.BaselineStore = (*DB)(nil)
	_ duet.MetricStore   = (*DB)(nil)
)

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

// DecideBaseline approves or rejects owner's pending baseline id. Returns
// NOT_FOUND, CONFLICT, INVALID_ARGUMENT.
func (d *DB) DecideBaseline(ctx context.Context, owner, id string, status duet.BaselineStatus) (*duet.Baseline, error) {
	if status != duet.BaselineApproved && status != duet.BaselineRejected {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a baseline is approved or rejected, not %q", status)
	}
	var out *duet.Baseline
	err := d.tx(ctx, func(tx *sql.Tx) error {
		b, err := storerules.ScanBaseline(tx.QueryRowContext(ctx, `SELECT `+storerules.BaselineColumns+` FROM baselines b WHERE b.id = ? AND b.owner = ?`, id, owner), false)
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
	return all(ctx, d.q, storerules.ScanMetric, `SELECT run_id, execution_id, task_id, case_key, step_index, name, value, created_at FROM run_metrics
		WHERE run_id IN (?`+strings.Repeat(", ?", len(runIDs)-1)+`) ORDER BY created_at, execution_id, step_index, name`, args...)
}
