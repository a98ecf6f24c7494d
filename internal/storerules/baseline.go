package storerules

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
)

// BaselineColumns are the columns of baselines b that ScanBaseline reads
// (without the image).
const BaselineColumns = `b.id, b.task_id, b.case_id, b.case_key, b.case_version, b.name, b.device, b.environment, b.owner, b.fingerprint,
	b.version, b.status, b.sha256, b.width, b.height, b.run_id, b.execution_id, b.step_index, b.diff_ratio, b.created_at, b.decided_by, b.decided_at`

// ScanBaseline reads a baseline of BaselineColumns, followed by b.image
// when image is set.
func ScanBaseline(r Row, image bool) (*duet.Baseline, error) {
	var b duet.Baseline
	var ratio sql.NullFloat64
	dest := []any{&b.ID, &b.TaskID, &b.CaseID, &b.CaseKey, &b.CaseVersion, &b.Name, &b.Device, &b.Environment, &b.Owner, &b.Fingerprint,
		&b.Version, &b.Status, &b.SHA256, &b.Width, &b.Height, &b.RunID, &b.ExecutionID, &b.StepIndex, &ratio, TimeOf(&b.CreatedAt), &b.DecidedBy, TimePtrOf(&b.DecidedAt)}
	if image {
		dest = append(dest, &b.Image)
	}
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	if ratio.Valid {
		b.DiffRatio = &ratio.Float64
	}
	return &b, nil
}

// scanBaselineImage is ScanBaseline with the image.
func scanBaselineImage(r Row) (*duet.Baseline, error) { return ScanBaseline(r, true) }

// Baselines is the part of duet.BaselineStore that is the same on every
// engine: the reads (the drivers create and decide baselines).
type Baselines struct{ E Engine }

// FindCurrentBaseline returns the newest approved baseline of key at
// fingerprint, else its newest first recording awaiting approval (never a
// candidate recorded because a screenshot differed), with its image.
// Returns NOT_FOUND.
func (s Baselines) FindCurrentBaseline(ctx context.Context, key duet.BaselineKey, fingerprint string) (*duet.Baseline, error) {
	b, err := One(ctx, s.E, scanBaselineImage, `SELECT `+BaselineColumns+`, b.image FROM baselines b
		WHERE b.task_id = $1 AND b.case_id = $2 AND b.name = $3 AND b.device = $4 AND b.environment = $5 AND b.owner = $6 AND b.fingerprint = $7
		AND (b.status = 'approved' OR (b.status = 'pending' AND b.diff_ratio IS NULL))
		ORDER BY b.status = 'approved' DESC, b.version DESC LIMIT 1`,
		key.TaskID, key.CaseID, key.Name, key.Device, key.Environment, key.Owner, fingerprint)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, duet.Errorf(duet.CodeNotFound, "no baseline of %s", key.Name)
	}
	return b, err
}

// FindBaseline returns owner's baseline id with its image. Returns
// NOT_FOUND.
func (s Baselines) FindBaseline(ctx context.Context, owner, id string) (*duet.Baseline, error) {
	b, err := One(ctx, s.E, scanBaselineImage, `SELECT `+BaselineColumns+`, b.image FROM baselines b WHERE b.id = $1 AND b.owner = $2`, id, owner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("baseline", id)
	}
	return b, err
}

// FindBaselines returns the filter's baselines, newest first, without
// images. Returns INVALID_ARGUMENT without an owner.
func (s Baselines) FindBaselines(ctx context.Context, f duet.BaselineFilter) ([]*duet.Baseline, error) {
	if f.Owner == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "listing baselines needs their owner")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	w := Filter{Args: []any{f.Owner}}
	q := `SELECT ` + BaselineColumns + ` FROM baselines b WHERE b.owner = $1`
	if f.TaskID != "" {
		q += ` AND b.task_id = ` + w.Add(f.TaskID)
	}
	if f.Status != "" {
		q += ` AND b.status = ` + w.Add(string(f.Status))
	}
	q += ` ORDER BY b.created_at DESC, b.id DESC LIMIT ` + w.Add(min(limit, 1000))
	return All(ctx, s.E, func(r Row) (*duet.Baseline, error) { return ScanBaseline(r, false) }, q, w.Args...)
}

// InsertBaseline writes b, checked by CheckBaseline, as the next version
// of its key on e (the transaction that fenced it, and where writers of
// one key take turns, locked the key): its id, version and creation time
// (as stored) are set.
func InsertBaseline(ctx context.Context, e Engine, b *duet.Baseline) error {
	var last sql.NullInt64
	if err := e.Read(ctx, []any{&last}, `SELECT MAX(version) FROM baselines WHERE task_id = $1 AND case_id = $2 AND name = $3 AND device = $4 AND environment = $5 AND owner = $6`,
		b.TaskID, b.CaseID, b.Name, b.Device, b.Environment, b.Owner); err != nil {
		return err
	}
	b.ID, b.Version, b.CreatedAt = duet.NewID("base"), int(last.Int64)+1, Stored(e.Now())
	var ratio any
	if b.DiffRatio != nil {
		ratio = *b.DiffRatio
	}
	_, err := e.Exec(ctx, `INSERT INTO baselines (id, task_id, case_id, case_key, case_version, name, device, environment, owner, fingerprint,
		version, status, image, sha256, width, height, run_id, execution_id, step_index, diff_ratio, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
		b.ID, b.TaskID, b.CaseID, b.CaseKey, b.CaseVersion, b.Name, b.Device, b.Environment, b.Owner, b.Fingerprint,
		b.Version, b.Status, b.Image, b.SHA256, b.Width, b.Height, b.RunID, b.ExecutionID, b.StepIndex, ratio, e.Stored(b.CreatedAt))
	return err
}

// DecideBaseline approves or rejects owner's pending baseline id. Returns
// NOT_FOUND, CONFLICT, INVALID_ARGUMENT.
func (s Baselines) DecideBaseline(ctx context.Context, owner, id string, status duet.BaselineStatus) (*duet.Baseline, error) {
	if status != duet.BaselineApproved && status != duet.BaselineRejected {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a baseline is approved or rejected, not %q", status)
	}
	var out *duet.Baseline
	err := s.E.Tx(ctx, func(tx Engine) error {
		b, err := One(ctx, tx, func(r Row) (*duet.Baseline, error) { return ScanBaseline(r, false) },
			`SELECT `+BaselineColumns+` FROM baselines b WHERE b.id = $1 AND b.owner = $2`+tx.ForUpdate, id, owner)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("baseline", id)
		} else if err != nil {
			return err
		}
		if b.Status != duet.BaselinePending {
			return duet.Errorf(duet.CodeConflict, "baseline %s was already %s by %s", id, b.Status, b.DecidedBy)
		}
		now := Stored(tx.Now())
		if _, err := tx.Exec(ctx, `UPDATE baselines SET status = $1, decided_by = $2, decided_at = $3 WHERE id = $4`, status, owner, tx.Stored(now), id); err != nil {
			return err
		}
		b.Status, b.DecidedBy, b.DecidedAt = status, owner, &now
		out = b
		return nil
	})
	return out, err
}

// SaveMetrics stores page-speed values ms under the lease l on e, a
// transaction, replacing those of the same execution, step and name;
// held fences the writes of each execution (LEASE_LOST).
func SaveMetrics(ctx context.Context, e Engine, l duet.Lease, ms []*duet.Metric, held func(executionID string) error) error {
	fenced := map[string]bool{}
	for _, m := range ms {
		if m.RunID != l.RunID {
			return duet.LeaseLost(l)
		}
		if !fenced[m.ExecutionID] {
			if err := held(m.ExecutionID); err != nil {
				return err
			}
			fenced[m.ExecutionID] = true
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = e.Now()
		}
		m.CreatedAt = Stored(m.CreatedAt)
		if _, err := e.Exec(ctx, `INSERT INTO run_metrics (run_id, execution_id, task_id, case_key, step_index, name, value, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (execution_id, step_index, name) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`,
			m.RunID, m.ExecutionID, m.TaskID, m.CaseKey, m.StepIndex, m.Name, m.Value, e.Stored(m.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// Metrics is the part of duet.MetricStore that is the same on every
// engine.
type Metrics struct{ E Engine }

// FindMetrics returns the values the runs measured.
func (s Metrics) FindMetrics(ctx context.Context, runIDs []string) ([]*duet.Metric, error) {
	if len(runIDs) == 0 {
		return []*duet.Metric{}, nil
	}
	in, args := s.E.In("run_id", runIDs)
	return All(ctx, s.E, ScanMetric, `SELECT run_id, execution_id, task_id, case_key, step_index, name, value, created_at FROM run_metrics
		WHERE `+in+` ORDER BY created_at, execution_id, step_index, name`, args...)
}

// ScanMetric reads a metric of (run_id, execution_id, task_id, case_key,
// step_index, name, value, created_at).
func ScanMetric(r Row) (*duet.Metric, error) {
	var m duet.Metric
	return scanned(&m, r.Scan(&m.RunID, &m.ExecutionID, &m.TaskID, &m.CaseKey, &m.StepIndex, &m.Name, &m.Value, TimeOf(&m.CreatedAt)))
}
