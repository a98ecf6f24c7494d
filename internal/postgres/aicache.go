package postgres

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

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
	return storerules.CaseAIPlans(ctx, d.AIPlans.E, caseID)
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
