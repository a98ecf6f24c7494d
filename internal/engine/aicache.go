package engine

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
)

// A caseRun keeps the plans of acting AI steps in the shared cache of its
// store: read by the step's key (the case version and the outermost step
// running), written only under the run's lease.
var _ step.AICacher = (*caseRun)(nil)

// aiPlanKey is the cache key of the step now running: a step inside a
// flow shares its outermost step's key (its prompt tells it apart).
func (cr *caseRun) aiPlanKey(st *duet.Step) (duet.AIPlanKey, bool) {
	if cr.hooks != nil || cr.x == nil || cr.x.CaseID == "" {
		return duet.AIPlanKey{}, false // a beforeAll or afterAll hook: no case to key by
	}
	idx := st.Index
	if len(cr.running) > 0 {
		idx = cr.running[0].Index
	}
	return duet.AIPlanKey{TaskID: cr.task.ID, CaseID: cr.x.CaseID, CaseVersion: cr.x.CaseVersion, StepIndex: idx}, true
}

// AIPlans implements step.AICacher.
func (cr *caseRun) AIPlans(ctx context.Context, st *duet.Step, stepHash string) ([]*duet.AIPlan, error) {
	key, ok := cr.aiPlanKey(st)
	if !ok {
		return nil, nil
	}
	var plans []*duet.AIPlan
	err := cr.w.read(ctx, func(ctx context.Context) error {
		var err error
		plans, err = cr.e.store.FindAIPlans(ctx, key, stepHash)
		return err
	})
	return plans, err
}

// UsedAIPlan implements step.AICacher.
func (cr *caseRun) UsedAIPlan(ctx context.Context, id string) error {
	return cr.w.do(ctx, func(ctx context.Context, l duet.Lease) error { return cr.e.store.UseAIPlan(ctx, l, id) })
}

// SaveAIPlan implements step.AICacher: the plan is stored under the run's
// lease; a healed one is also proposed as a draft version of the case.
func (cr *caseRun) SaveAIPlan(ctx context.Context, st *duet.Step, p *duet.AIPlan, healed bool) (string, error) {
	key, ok := cr.aiPlanKey(st)
	if !ok {
		return "", nil
	}
	p.AIPlanKey, p.RunID, p.ExecutionID, p.CreatedBy = key, cr.run.ID, cr.x.ID, cr.run.TriggeredBy
	if err := cr.w.do(ctx, func(ctx context.Context, l duet.Lease) error { return cr.e.store.SaveAIPlan(ctx, l, p) }); err != nil {
		return "", err
	}
	if !healed {
		return "", nil
	}
	return cr.proposeHealed(ctx, st, p)
}
