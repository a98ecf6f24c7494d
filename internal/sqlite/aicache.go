package sqlite

import (
	"context"
	"database/sql"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// SaveAIPlan stores p under the lease l, one plan per key, step hash and
// fingerprint, at most MaxAIPlansPerStep per step.
func (d *DB) SaveAIPlan(ctx context.Context, l duet.Lease, p *duet.AIPlan) error {
	actions, err := storerules.EncodeAIPlan(l, p)
	if err != nil {
		return err
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		if err := held(ctx, tx, l, p.ExecutionID); err != nil {
			return err
		}
		now := d.now()
		p.ID, p.CreatedAt, p.UsedAt, p.Hits = duet.NewID("aip"), now, now, 0
		if _, err := tx.ExecContext(ctx, `INSERT INTO ai_plans (id, task_id, case_id, case_version, step_index, step_hash, fingerprint, actions, run_id, execution_id, created_by, hits, created_at, used_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
			ON CONFLICT (case_id, case_version, step_index, step_hash, fingerprint) DO UPDATE SET
				id = excluded.id, actions = excluded.actions, run_id = excluded.run_id, execution_id = excluded.execution_id,
				created_by = excluded.created_by, hits = 0, created_at = excluded.created_at, used_at = excluded.used_at`,
			p.ID, p.TaskID, p.CaseID, p.CaseVersion, p.StepIndex, p.StepHash, p.Fingerprint, actions, p.RunID, p.ExecutionID, p.CreatedBy,
			micros(now), micros(now)); err != nil {
			return mapErr(err)
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM ai_plans WHERE case_id = ? AND case_version = ? AND step_index = ? AND id NOT IN (
			SELECT id FROM ai_plans WHERE case_id = ? AND case_version = ? AND step_index = ? ORDER BY used_at DESC, id DESC LIMIT ?)`,
			p.CaseID, p.CaseVersion, p.StepIndex, p.CaseID, p.CaseVersion, p.StepIndex, duet.MaxAIPlansPerStep)
		return mapErr(err)
	})
}

// FindAIPlans returns the plans of a step, most recently used first.
func (d *DB) FindAIPlans(ctx context.Context, key duet.AIPlanKey, stepHash string) ([]*duet.AIPlan, error) {
	return all(ctx, d.q, storerules.ScanAIPlan, `SELECT `+storerules.AIPlanColumns+` FROM ai_plans p
		WHERE p.task_id = ? AND p.case_id = ? AND p.case_version = ? AND p.step_index = ? AND p.step_hash = ?
		ORDER BY p.used_at DESC, p.id DESC LIMIT ?`, key.TaskID, key.CaseID, key.CaseVersion, key.StepIndex, stepHash, duet.MaxAIPlansPerStep)
}

// UseAIPlan counts a replay of plan id under the lease l.
func (d *DB) UseAIPlan(ctx context.Context, l duet.Lease, id string) error {
	return d.tx(ctx, func(tx *sql.Tx) error {
		var ok bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs r WHERE r.id = ? AND r.lease_owner = ? AND r.attempt = ? AND r.status = 'running')`,
			l.RunID, l.Worker, l.Token).Scan(&ok); err != nil {
			return mapErr(err)
		}
		if !ok {
			return duet.LeaseLost(l)
		}
		_, err := tx.ExecContext(ctx, `UPDATE ai_plans SET hits = hits + 1, used_at = ? WHERE id = ?`, micros(d.now()), id)
		return mapErr(err)
	})
}

// FindCaseAIPlans returns the plans of a case viewer may see.
func (d *DB) FindCaseAIPlans(ctx context.Context, viewer, caseID string) ([]*duet.AIPlan, error) {
	if _, err := d.FindCaseByID(ctx, viewer, caseID); err != nil {
		return nil, err
	}
	return all(ctx, d.q, storerules.ScanAIPlan, `SELECT `+storerules.AIPlanColumns+` FROM ai_plans p WHERE p.case_id = ?
		ORDER BY p.case_version, p.step_index, p.used_at DESC, p.id`, caseID)
}

// ClearAIPlans removes the plans of owner's task (of one case of it).
func (d *DB) ClearAIPlans(ctx context.Context, owner, taskID, caseID string) (int, error) {
	var n int
	err := d.tx(ctx, func(tx *sql.Tx) error {
		var ok bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tasks t WHERE t.id = ?2 AND (t.owner = ?1 OR t.owner IN `+teamsOf+`))`, owner, taskID).Scan(&ok); err != nil {
			return mapErr(err)
		}
		if !ok {
			return storerules.NotFound("task", taskID)
		}
		q, args := `DELETE FROM ai_plans WHERE task_id = ?`, []any{taskID}
		if caseID != "" {
			q, args = q+` AND case_id = ?`, append(args, caseID)
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return mapErr(err)
		}
		c, _ := res.RowsAffected()
		n = int(c)
		return nil
	})
	return n, err
}
