package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

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
	return d.tx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `WITH `+heldSQL+` SELECT count(*) FROM held`, l.RunID, l.Worker, l.Token, p.ExecutionID).Scan(&n); err != nil {
			return mapErr(err)
		}
		if n == 0 {
			return duet.LeaseLost(l)
		}
		now := ts(d.now()).UTC()
		p.ID, p.CreatedAt, p.UsedAt, p.Hits = duet.NewID("aip"), now, now, 0
		if _, err := tx.Exec(ctx, `INSERT INTO ai_plans (id, task_id, case_id, case_version, step_index, step_hash, fingerprint, actions, run_id, execution_id, created_by, hits, created_at, used_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, $12, $12)
			ON CONFLICT (case_id, case_version, step_index, step_hash, fingerprint) DO UPDATE SET
				id = excluded.id, actions = excluded.actions, run_id = excluded.run_id, execution_id = excluded.execution_id,
				created_by = excluded.created_by, hits = 0, created_at = excluded.created_at, used_at = excluded.used_at`,
			p.ID, p.TaskID, p.CaseID, p.CaseVersion, p.StepIndex, p.StepHash, p.Fingerprint, actions, p.RunID, p.ExecutionID, p.CreatedBy, now); err != nil {
			return mapErr(err)
		}
		_, err := tx.Exec(ctx, `DELETE FROM ai_plans WHERE case_id = $1 AND case_version = $2 AND step_index = $3 AND id NOT IN (
			SELECT id FROM ai_plans WHERE case_id = $1 AND case_version = $2 AND step_index = $3 ORDER BY used_at DESC, id DESC LIMIT $4)`,
			p.CaseID, p.CaseVersion, p.StepIndex, duet.MaxAIPlansPerStep)
		return mapErr(err)
	})
}

// FindAIPlans returns the plans of a step, most recently used first.
func (d *DB) FindAIPlans(ctx context.Context, key duet.AIPlanKey, stepHash string) ([]*duet.AIPlan, error) {
	return all(ctx, d.pool, storerules.ScanAIPlan, `SELECT `+storerules.AIPlanColumns+` FROM ai_plans p
		WHERE p.task_id = $1 AND p.case_id = $2 AND p.case_version = $3 AND p.step_index = $4 AND p.step_hash = $5
		ORDER BY p.used_at DESC, p.id DESC LIMIT $6`, key.TaskID, key.CaseID, key.CaseVersion, key.StepIndex, stepHash, duet.MaxAIPlansPerStep)
}

// UseAIPlan counts a replay of plan id under the lease l.
func (d *DB) UseAIPlan(ctx context.Context, l duet.Lease, id string) error {
	tag, err := d.pool.Exec(ctx, `UPDATE ai_plans SET hits = hits + 1, used_at = $5 WHERE id = $4
		AND EXISTS (SELECT 1 FROM runs r WHERE r.id = $1 AND r.lease_owner = $2 AND r.attempt = $3 AND r.status = 'running')`,
		l.RunID, l.Worker, l.Token, id, ts(d.now()).UTC())
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		var held bool
		if err := d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs r WHERE r.id = $1 AND r.lease_owner = $2 AND r.attempt = $3 AND r.status = 'running')`,
			l.RunID, l.Worker, l.Token).Scan(&held); err != nil {
			return mapErr(err)
		}
		if !held {
			return duet.LeaseLost(l)
		}
	}
	return nil
}

// FindCaseAIPlans returns the plans of a case viewer may see.
func (d *DB) FindCaseAIPlans(ctx context.Context, viewer, caseID string) ([]*duet.AIPlan, error) {
	if _, err := d.FindCaseByID(ctx, viewer, caseID); err != nil {
		return nil, err
	}
	return all(ctx, d.pool, storerules.ScanAIPlan, `SELECT `+storerules.AIPlanColumns+` FROM ai_plans p WHERE p.case_id = $1
		ORDER BY p.case_version, p.step_index, p.used_at DESC, p.id`, caseID)
}

// ClearAIPlans removes the plans of owner's task (of one case of it).
func (d *DB) ClearAIPlans(ctx context.Context, owner, taskID, caseID string) (int, error) {
	var ok bool
	if err := d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks t WHERE t.id = $2 AND (t.owner = $1 OR t.owner IN `+teamsOf+`))`, owner, taskID).Scan(&ok); err != nil {
		return 0, mapErr(err)
	}
	if !ok {
		return 0, storerules.NotFound("task", taskID)
	}
	tag, err := d.pool.Exec(ctx, `DELETE FROM ai_plans WHERE task_id = $1 AND ($2 = '' OR case_id = $2)`, taskID, caseID)
	if err != nil {
		return 0, mapErr(err)
	}
	return int(tag.RowsAffected()), nil
}
