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

// ScanMetric reads a metric of (run_id, execution_id, task_id, case_key,
// step_index, name, value, created_at).
func ScanMetric(r Row) (*duet.Metric, error) {
	var m duet.Metric
	return scanned(&m, r.Scan(&m.RunID, &m.ExecutionID, &m.TaskID, &m.CaseKey, &m.StepIndex, &m.Name, &m.Value, TimeOf(&m.CreatedAt)))
}
