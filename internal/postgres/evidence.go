package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var (
	_ duet.BaselineStore = (*DB)(nil)
	_ duet.MetricStore   = (*DB)(nil)
)

const baselineColumns = `b.id, b.task_id, b.case_id, b.case_key, b.case_version, b.name, b.device, b.environment, b.owner, b.fingerprint,
	b.version, b.status, b.sha256, b.width, b.height, b.run_id, b.execution_id, b.step_index, b.diff_ratio, b.created_at, b.decided_by, b.decided_at`

func scanBaselineWith(image bool) func(rowScanner) (*duet.Baseline, error) {
	return func(r rowScanner) (*duet.Baseline, error) {
		var b duet.Baseline
		dest := []any{&b.ID, &b.TaskID, &b.CaseID, &b.CaseKey, &b.CaseVersion, &b.Name, &b.Device, &b.Environment, &b.Owner, &b.Fingerprint,
			&b.Version, &b.Status, &b.SHA256, &b.Width, &b.Height, &b.RunID, &b.ExecutionID, &b.StepIndex, &b.DiffRatio, &b.CreatedAt, &b.DecidedBy, &b.DecidedAt}
		if image {
			dest = append(dest, &b.Image)
		}
		if err := r.Scan(dest...); err != nil {
			return nil, err
		}
		b.CreatedAt, b.DecidedAt = utc(b.CreatedAt), utcPtr(b.DecidedAt)
		return &b, nil
	}
}

// CreateBaseline stores b as the next version of its key, fenced by the
// lease l on the run that recorded it (heldSQL: the run row is locked FOR
// SHARE until the insert commits, so a claim that takes the run over waits
// for it or leaves the fence empty). Returns INVALID_ARGUMENT, LEASE_LOST.
func (d *DB) CreateBaseline(ctx context.Context, l duet.Lease, b *duet.Baseline) error {
	if err := storerules.CheckBaseline(l, b); err != nil {
		return err
	}
	return d.tx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `WITH `+heldSQL+` SELECT count(*) FROM held`, l.RunID, l.Worker, l.Token, b.ExecutionID).Scan(&n); err != nil {
			return mapErr(err)
		}
		if n == 0 {
			return duet.LeaseLost(l)
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

// FindCurrentBaseline returns the newest approved baseline of key at
// fingerprint, else its newest first recording awaiting approval (never a
// candidate recorded because a screenshot differed), with its image.
// Returns NOT_FOUND.
func (d *DB) FindCurrentBaseline(ctx context.Context, key duet.BaselineKey, fingerprint string) (*duet.Baseline, error) {
	b, err := scanBaselineWith(true)(d.pool.QueryRow(ctx, `SELECT `+baselineColumns+`, b.image FROM baselines b
		WHERE b.task_id = $1 AND b.case_id = $2 AND b.name = $3 AND b.device = $4 AND b.environment = $5 AND b.owner = $6 AND b.fingerprint = $7
		AND (b.status = 'approved' OR (b.status = 'pending' AND b.diff_ratio IS NULL))
		ORDER BY b.status = 'approved' DESC, b.version DESC LIMIT 1`,
		key.TaskID, key.CaseID, key.Name, key.Device, key.Environment, key.Owner, fingerprint))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "no baseline of %s", key.Name)
	}
	return b, mapErr(err)
}

// FindBaseline returns owner's baseline id with its image. Returns
// NOT_FOUND.
func (d *DB) FindBaseline(ctx context.Context, owner, id string) (*duet.Baseline, error) {
	b, err := scanBaselineWith(true)(d.pool.QueryRow(ctx, `SELECT `+baselineColumns+`, b.image FROM baselines b WHERE b.id = $1 AND b.owner = $2`, id, owner))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := d.pool.Query(ctx, `SELECT `+baselineColumns+` FROM baselines b WHERE b.owner = $1
		AND ($2 = '' OR b.task_id = $2) AND ($3 = '' OR b.status = $3)
		ORDER BY b.created_at DESC, b.id DESC LIMIT $4`, f.Owner, f.TaskID, string(f.Status), min(limit, 1000))
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, scanBaselineWith(false))
	if out == nil {
		out = []*duet.Baseline{}
	}
	return out, err
}

// DecideBaseline approves or rejects owner's pending baseline id. Returns
// NOT_FOUND, CONFLICT, INVALID_ARGUMENT.
func (d *DB) DecideBaseline(ctx context.Context, owner, id string, status duet.BaselineStatus) (*duet.Baseline, error) {
	if status != duet.BaselineApproved && status != duet.BaselineRejected {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a baseline is approved or rejected, not %q", status)
	}
	var out *duet.Baseline
	err := d.tx(ctx, func(tx pgx.Tx) error {
		b, err := scanBaselineWith(false)(tx.QueryRow(ctx, `SELECT `+baselineColumns+` FROM baselines b WHERE b.id = $1 AND b.owner = $2 FOR UPDATE`, id, owner))
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
				var n int
				if err := tx.QueryRow(ctx, `WITH `+heldSQL+` SELECT count(*) FROM held`, l.RunID, l.Worker, l.Token, m.ExecutionID).Scan(&n); err != nil {
					return mapErr(err)
				}
				if n == 0 {
					return duet.LeaseLost(l)
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
	rows, err := d.pool.Query(ctx, `SELECT run_id, execution_id, task_id, case_key, step_index, name, value, created_at FROM run_metrics
		WHERE run_id = ANY($1) ORDER BY created_at, execution_id, step_index, name`, runIDs)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var m duet.Metric
		var at time.Time
		if err := rows.Scan(&m.RunID, &m.ExecutionID, &m.TaskID, &m.CaseKey, &m.StepIndex, &m.Name, &m.Value, &at); err != nil {
			return nil, mapErr(err)
		}
		m.CreatedAt = utc(at)
		out = append(out, &m)
	}
	return out, mapErr(rows.Err())
}
