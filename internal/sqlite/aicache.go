package sqlite

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// UseAIPlan counts a replay of plan id under the lease l.
func (d *DB) UseAIPlan(ctx context.Context, l duet.Lease, id string) error {
	return d.tx(ctx, func(tx *cachedTx) error {
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
	return storerules.CaseAIPlans(ctx, d.AIPlans.E, caseID)
}

// ClearAIPlans removes the plans of owner's task (of one case of it).
func (d *DB) ClearAIPlans(ctx context.Context, owner, taskID, caseID string) (int, error) {
	var n int
	err := d.tx(ctx, func(tx *cachedTx) error {
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
