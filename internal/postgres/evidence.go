package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var (
	_ duet.BaselineStore = (*DB)(nil)
	_ duet.MetricStore   = (*DB)(nil)
)

// CreateBaseline stores b as the next version of its key, fenced by the
// lease l on the run that recorded it (heldSQL: the run row is locked FOR
// SHARE until the insert commits, so a claim that takes the run over waits
// for it or leaves the fence empty). Returns INVALID_ARGUMENT, LEASE_LOST.
func (d *DB) CreateBaseline(ctx context.Context, l duet.Lease, b *duet.Baseline) error {
	if err := storerules.CheckBaseline(l, b); err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		if err := held(ctx, tx, l, b.ExecutionID); err != nil {
			return err
		}
		// Versions of one key are numbered one at a time.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 28))`,
			b.TaskID+"\x1f"+b.CaseID+"\x1f"+b.Name+"\x1f"+b.Device+"\x1f"+b.Environment+"\x1f"+b.Owner); err != nil {
			return mapErr(err)
		}
		var last *int
		if err := tx.QueryRow(ctx, `SELECT MAX(version) FROM baselines WHERE task_id = $1 AND case_id = $2 AND name = $3 AND device = $4 AND environment = $5 AND owner = $6`,
			b.TaskID, b.CaseID, b.Name, b.Device, b.Environment, b.Owner).Scan(&last); err != nil {
			return mapErr(err)
		}
		b.ID, b.Version, b.CreatedAt = duet.NewID("base"), 1, ts(d.now()).UTC()
		if last != nil {
			b.Version = *last + 1
		}
		_, err := tx.Exec(ctx, `INSERT INTO baselines (id, task_id, case_id, case_key, case_version, name, device, environment, owner, fingerprint,
			version, status, image, sha256, width, height, run_id, execution_id, step_index, diff_ratio, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
			b.ID, b.TaskID, b.CaseID, b.CaseKey, b.CaseVersion, b.Name, b.Device, b.Environment, b.Owner, b.Fingerprint,
			b.Version, b.Status, b.Image, b.SHA256, b.Width, b.Height, b.RunID, b.ExecutionID, b.StepIndex, b.DiffRatio, b.CreatedAt)
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
	err := d.tx(ctx, func(tx pgx.Tx) error {
		b, err := storerules.ScanBaseline(tx.QueryRow(ctx, `SELECT `+storerules.BaselineColumns+` FROM baselines b WHERE b.id = $1 AND b.owner = $2 FOR UPDATE`, id, owner), false)
		if err != nil {
			return found(err, "baseline", id)
		}
		if b.Status != duet.BaselinePending {
			return duet.Errorf(duet.CodeConflict, "baseline %s was already %s by %s", id, b.Status, b.DecidedBy)
		}
		now := ts(d.now()).UTC()
		if _, err := tx.Exec(ctx, `UPDATE baselines SET status = $1, decided_by = $2, decided_at = $3 WHERE id = $4`, status, owner, now, id); err != nil {
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
	return d.tx(ctx, func(tx pgx.Tx) error {
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
			m.CreatedAt = ts(m.CreatedAt).UTC()
			if _, err := tx.Exec(ctx, `INSERT INTO run_metrics (run_id, execution_id, task_id, case_key, step_index, name, value, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
				ON CONFLICT (execution_id, step_index, name) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`,
				m.RunID, m.ExecutionID, m.TaskID, m.CaseKey, m.StepIndex, m.Name, m.Value, m.CreatedAt); err != nil {
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
	return all(ctx, d.pool, storerules.ScanMetric, `SELECT run_id, execution_id, task_id, case_key, step_index, name, value, created_at FROM run_metrics
		WHERE run_id = ANY($1) ORDER BY created_at, execution_id, step_index, name`, runIDs)
}
