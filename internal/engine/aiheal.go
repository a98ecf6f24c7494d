package engine

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/step"
)

// HealedSuffix ends the key of the draft a healed AI step proposes: the
// case's key, then this.
const HealedSuffix = "-healed"

// proposeHealed proposes the plan p of the healed step st as a draft
// version of the case: its source with the step replaced by the written
// steps the plan resolved to, compiled for the task, saved as a draft of
// the run's executor under the key KEY-healed. A draft is a proposal: it
// runs only when named, and only the task's owner makes it the case
// (applying it to the suite), never the executor who ran into the change.
// It returns the draft's id; a step the source does not have at its top
// level (inside a flow, a hook) proposes nothing.
func (cr *caseRun) proposeHealed(ctx context.Context, st *duet.Step, p *duet.AIPlan) (string, error) {
	if len(cr.running) > 1 || st.Hook != "" {
		return "", nil
	}
	var c *duet.Case
	if err := cr.w.read(ctx, func(ctx context.Context) error {
		var err error
		c, err = cr.e.store.FindCaseByID(ctx, "", cr.x.CaseID)
		return err
	}); err != nil {
		return "", err
	}
	if c.Version != cr.x.CaseVersion {
		return "", nil // the case changed since the run began: its owner is on it
	}
	src, n, err := step.Freeze(c.Source, c.Key+HealedSuffix, []step.FrozenStep{{Kind: st.Kind, Prompt: st.AI.Prompt, Value: st.AI.Value, Actions: p.Actions}})
	if err != nil || n == 0 {
		return "", err
	}
	draft, err := compiler.CompileCase(ctx, []byte(src), cr.task, compiler.Options{})
	if err == nil {
		draft.TaskID, draft.CreatedBy, draft.Status = c.TaskID, cr.run.TriggeredBy, duet.CaseDraft
		err = cr.e.store.SaveDraftCase(context.WithoutCancel(ctx), draft)
	}
	if err != nil {
		// The step healed and its plan is kept; only the proposal failed
		// (another author's draft holds the key, say).
		cr.e.log.WarnContext(ctx, "cannot propose the healed version of a case", "run", cr.run.ID, "case", c.ID, "err", err)
		return "", nil
	}
	return draft.ID, nil
}
