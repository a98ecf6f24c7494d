package api

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/step"
)

// The shared cache of acting AI steps (docs/ai-steps.md): who may see a
// case sees its plans; its task's owner clears them; anyone who may see it
// freezes its plans into a draft version of the case, which only the
// owner makes the case (by applying it).

// AIPlanList is the plans of a case.
type AIPlanList struct {
	Plans []*duet.AIPlan `json:"plans"`
}

// ClearAIPlansIn says whose plans to clear: a task's, or one case's of it.
type ClearAIPlansIn struct {
	TaskID string `json:"taskId"`
	CaseID string `json:"caseId,omitempty"`
}

// ClearAIPlansOut says how many plans went.
type ClearAIPlansOut struct {
	Cleared int `json:"cleared"`
}

// FreezeOut is the draft a freeze proposed and how many steps it wrote.
type FreezeOut struct {
	Draft    *duet.Case `json:"draft"`
	Replaced int        `json:"replaced"`
}

// FrozenSuffix ends the key of the draft a freeze proposes.
const FrozenSuffix = "-frozen"

// ListCaseAIPlans returns the cached plans of a case the caller may see.
// Returns NOT_FOUND.
func (s *Service) ListCaseAIPlans(ctx context.Context, c duet.Caller, caseID string) (AIPlanList, error) {
	return govern(ctx, s, c, "listCaseAIPlans", nil, func(ctx context.Context) (AIPlanList, error) {
		plans, err := s.d.Store.FindCaseAIPlans(ctx, c.UserID, caseID)
		return AIPlanList{Plans: plans}, err
	})
}

// ClearAIPlans removes the cached plans of the caller's task (of one case
// of it): the next run of each AI step asks the model again. Audited.
// Returns NOT_FOUND (also for another's task), INVALID_ARGUMENT.
func (s *Service) ClearAIPlans(ctx context.Context, c duet.Caller, in ClearAIPlansIn) (ClearAIPlansOut, error) {
	var out ClearAIPlansOut
	if in.TaskID == "" {
		return out, duet.Errorf(duet.CodeInvalidArgument, "taskId is required")
	}
	err := s.d.Catalog.Govern(ctx, catalogOp(c, "clearAIPlans", ""), func(ctx context.Context) (int, error) {
		n, err := s.d.Store.ClearAIPlans(ctx, c.UserID, in.TaskID, in.CaseID)
		out.Cleared = n
		return 0, err
	})
	return out, err
}

// FreezeCase turns the cached plans of a case's acting AI steps (of its
// current version, each step's most recently used plan) into the written
// steps they resolved to, as a draft of the caller under the key
// KEY-frozen: a proposal only the task's owner makes the case. Audited.
// Returns NOT_FOUND, INVALID_ARGUMENT when the
// case has no cached plan, CONFLICT (another author's draft has the key).
func (s *Service) FreezeCase(ctx context.Context, c duet.Caller, caseID string) (FreezeOut, error) {
	var out FreezeOut
	err := s.d.Catalog.Govern(ctx, catalogOp(c, "freezeCase", caseID), func(ctx context.Context) (int, error) {
		cs, err := s.d.Store.FindCaseByID(ctx, c.UserID, caseID)
		if err != nil {
			return 0, err
		}
		task, err := s.d.Store.FindTaskByID(ctx, c.UserID, cs.TaskID)
		if err != nil {
			return 0, err
		}
		plans, err := s.d.Store.FindCaseAIPlans(ctx, c.UserID, caseID)
		if err != nil {
			return 0, err
		}
		var frozen []step.FrozenStep
		seen := map[int]bool{}
		for _, p := range newestFirst(plans) {
			if p.CaseVersion != cs.Version || seen[p.StepIndex] || p.StepIndex < 0 || p.StepIndex >= len(cs.Steps) {
				continue
			}
			st := cs.Steps[p.StepIndex]
			if st.AI == nil || st.Hook != "" {
				continue
			}
			seen[p.StepIndex] = true
			frozen = append(frozen, step.FrozenStep{Kind: st.Kind, Prompt: st.AI.Prompt, Value: st.AI.Value, Actions: p.Actions})
		}
		if len(frozen) == 0 {
			return 0, duet.Errorf(duet.CodeInvalidArgument, "case %s (version %d) has no cached AI plan to freeze: run it first", caseID, cs.Version)
		}
		src, n, err := step.Freeze(cs.Source, cs.Key+FrozenSuffix, frozen)
		if err != nil {
			return 0, err
		}
		draft, err := compiler.CompileCase(ctx, []byte(src), task, compiler.Options{})
		if err != nil {
			return 0, err
		}
		draft.TaskID, draft.CreatedBy, draft.Status = cs.TaskID, c.UserID, duet.CaseDraft
		if err := s.d.Store.SaveDraftCase(ctx, draft); err != nil {
			return 0, err
		}
		out = FreezeOut{Draft: draft, Replaced: n}
		return 0, nil
	})
	return out, err
}

// newestFirst orders plans by their last use, newest first.
func newestFirst(plans []*duet.AIPlan) []*duet.AIPlan {
	out := append([]*duet.AIPlan(nil), plans...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].UsedAt.After(out[j-1].UsedAt); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// aiCacheRoutes are the REST routes of the AI steps' cache.
func aiCacheRoutes() []*route {
	return []*route{
		byID("GET", Prefix+"/cases/{caseId}/ai-plans", "listCaseAIPlans", "cases", "The cached plans of a case's acting AI steps (ai, aiTap, aiFill)", "the case's id", (*Service).ListCaseAIPlans),
		byID("POST", Prefix+"/cases/{caseId}/freeze", "freezeCase", "cases", "Propose the case with its cached AI steps written out as ordinary steps, as a draft for the task's owner (audited)", "the case's id", (*Service).FreezeCase),
		op("POST", Prefix+"/ai-plans/clear", "clearAIPlans", "cases", "Clear the cached AI plans of your task, or of one case of it (audited)",
			withBody((*Service).ClearAIPlans)),
	}
}
