package storerules

import (
	"context"

	"github.com/duet-test/duet"
)

// InsertAIPlan writes p, its actions encoded by EncodeAIPlan, on e (the
// transaction that found the lease holds p's execution), created now (as
// stored): it replaces the plan of p's step, step hash and fingerprint,
// and only the duet.MaxAIPlansPerStep plans of the step used last stay.
func InsertAIPlan(ctx context.Context, e Engine, p *duet.AIPlan, actions string) error {
	now := Stored(e.Now())
	p.ID, p.CreatedAt, p.UsedAt, p.Hits = duet.NewID("aip"), now, now, 0
	if _, err := e.Exec(ctx, `INSERT INTO ai_plans (id, task_id, case_id, case_version, step_index, step_hash, fingerprint, actions, run_id, execution_id, created_by, hits, created_at, used_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, $12, $12)
		ON CONFLICT (case_id, case_version, step_index, step_hash, fingerprint) DO UPDATE SET
			id = excluded.id, actions = excluded.actions, run_id = excluded.run_id, execution_id = excluded.execution_id,
			created_by = excluded.created_by, hits = 0, created_at = excluded.created_at, used_at = excluded.used_at`,
		p.ID, p.TaskID, p.CaseID, p.CaseVersion, p.StepIndex, p.StepHash, p.Fingerprint, actions, p.RunID, p.ExecutionID, p.CreatedBy, e.Stored(now)); err != nil {
		return err
	}
	_, err := e.Exec(ctx, `DELETE FROM ai_plans WHERE case_id = $1 AND case_version = $2 AND step_index = $3 AND id NOT IN (
		SELECT id FROM ai_plans WHERE case_id = $1 AND case_version = $2 AND step_index = $3 ORDER BY used_at DESC, id DESC LIMIT $4)`,
		p.CaseID, p.CaseVersion, p.StepIndex, duet.MaxAIPlansPerStep)
	return err
}

// AIPlans is the part of duet.AIPlanStore that is the same on every
// engine.
type AIPlans struct{ E Engine }

// FindAIPlans returns the plans of a step, most recently used first.
func (s AIPlans) FindAIPlans(ctx context.Context, key duet.AIPlanKey, stepHash string) ([]*duet.AIPlan, error) {
	return All(ctx, s.E, ScanAIPlan, `SELECT `+AIPlanColumns+` FROM ai_plans p
		WHERE p.task_id = $1 AND p.case_id = $2 AND p.case_version = $3 AND p.step_index = $4 AND p.step_hash = $5
		ORDER BY p.used_at DESC, p.id DESC LIMIT $6`, key.TaskID, key.CaseID, key.CaseVersion, key.StepIndex, stepHash, duet.MaxAIPlansPerStep)
}

// CaseAIPlans returns, on e, the plans of case caseID by version, step and
// last use (the driver checks the viewer may see the case).
func CaseAIPlans(ctx context.Context, e Engine, caseID string) ([]*duet.AIPlan, error) {
	return All(ctx, e, ScanAIPlan, `SELECT `+AIPlanColumns+` FROM ai_plans p WHERE p.case_id = $1
		ORDER BY p.case_version, p.step_index, p.used_at DESC, p.id`, caseID)
}
