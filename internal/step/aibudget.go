package step

import (
	"context"
	"time"

	"github.com/duet-test/duet"
)

// The budgets of AI steps, each checked before a model call, which is
// refused with LLM_BUDGET_EXCEEDED naming the budget that would be passed:
//
//   - the step's tokens (maxTokens, else DUET_LLM_STEP_TOKENS) and time
//     (the step's timeout, which bounds its model calls too);
//   - the run's tokens (DUET_LLM_RUN_TOKENS) and the time its AI steps
//     wait for the model (DUET_LLM_RUN_TIME), counted by the engine for
//     every case of the run;
//   - the executor's tokens per UTC day (DUET_LLM_USER_DAY_TOKENS),
//     counted in the database so that it holds across workers and
//     instances: each call reserves what it may spend in one conditional
//     upsert before it is made, and settles the difference after.

// budgetsAllow refuses a call that needs about need tokens when it would
// pass the step's or the run's token budget, or when the run's model time
// is spent.
func (a *aiRun) budgetsAllow(ae AIEnv, need int) error {
	if a.used+need > a.budget {
		return duet.Errorf(duet.CodeLLMBudgetExceeded,
			"%s: the token budget of %d is spent: %d used by %d model calls, and the next call needs about %d (raise maxTokens, or DUET_LLM_STEP_TOKENS)",
			a.st.Kind, a.budget, a.used, a.usage.Calls, need)
	}
	if ae == nil {
		return nil
	}
	if a.runBudget > 0 {
		if spent := ae.AIRunTokens(0); spent+need > a.runBudget {
			return duet.Errorf(duet.CodeLLMBudgetExceeded,
				"%s: the run's token budget of %d is spent: its AI steps used %d, and the next call needs about %d (raise DUET_LLM_RUN_TOKENS)",
				a.st.Kind, a.runBudget, spent, need)
		}
	}
	if limit := a.cfg.RunTime; limit > 0 {
		if waited := ae.AIRunTime(0); waited >= limit {
			return duet.Errorf(duet.CodeLLMBudgetExceeded,
				"%s: the run's model time budget of %s is spent: its AI steps waited %s for the model (raise DUET_LLM_RUN_TIME)",
				a.st.Kind, limit, waited.Round(time.Millisecond))
		}
	}
	return nil
}

// runTimeLeft bounds a model call by what is left of the run's model time.
func (a *aiRun) runTimeLeft(ctx context.Context, ae AIEnv) (context.Context, context.CancelFunc) {
	if limit := a.cfg.RunTime; limit > 0 && ae != nil {
		return context.WithTimeout(ctx, limit-ae.AIRunTime(0))
	}
	return context.WithCancel(ctx)
}

// spendTime counts how long a call waited against the run's model time,
// and turns a call cut short by that budget (not by the step's timeout)
// into LLM_BUDGET_EXCEEDED.
func (a *aiRun) spendTime(ctx, callCtx context.Context, ae AIEnv, waited time.Duration, err error) error {
	if ae == nil {
		return err
	}
	total := ae.AIRunTime(waited)
	if err != nil && ctx.Err() == nil && callCtx.Err() != nil {
		return duet.Errorf(duet.CodeLLMBudgetExceeded,
			"%s: the run's model time budget of %s ran out while the model answered: its AI steps waited %s (raise DUET_LLM_RUN_TIME)",
			a.st.Kind, a.cfg.RunTime, total.Round(time.Millisecond))
	}
	return err
}

// dayCharge is the tokens a call reserved on its executor's day.
type dayCharge struct {
	store    duet.LLMUsageStore
	user     string
	day      string
	reserved int
}

// reserveDay reserves need tokens on the day (UTC) of the run's executor
// before a call, within DUET_LLM_USER_DAY_TOKENS: LLM_BUDGET_EXCEEDED when
// they do not fit. With no store configured it counts nothing.
func (a *aiRun) reserveDay(ctx context.Context, need int) (*dayCharge, error) {
	cfg := a.cfg
	if cfg.Usage == nil {
		return nil, nil
	}
	caller, _ := duet.CallerFromContext(ctx)
	if caller.UserID == "" {
		if cfg.UserDayTokens > 0 {
			return nil, duet.Errorf(duet.CodeLLMBudgetExceeded, "%s: the run has no executor whose daily token budget (DUET_LLM_USER_DAY_TOKENS) it could count against", a.st.Kind)
		}
		return nil, nil
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	d := &dayCharge{store: cfg.Usage, user: caller.UserID, day: duet.LLMDay(now()), reserved: need}
	u, ok, err := cfg.Usage.ChargeLLMUsage(ctx, duet.LLMCharge{UserID: d.user, Day: d.day, Tokens: int64(need), Calls: 1, Limit: int64(cfg.UserDayTokens)})
	if err != nil {
		return nil, duet.WrapError(duet.ErrorCode(err), err, "%s: counting %s's AI tokens of the day: %s", a.st.Kind, d.user, duet.ErrorMessage(err))
	}
	if !ok {
		return nil, duet.Errorf(duet.CodeLLMBudgetExceeded,
			"%s: %s's daily token budget of %d is spent: their AI steps used %d on %s (UTC), and the next call needs about %d (raise DUET_LLM_USER_DAY_TOKENS, or wait for the next UTC day)",
			a.st.Kind, d.user, cfg.UserDayTokens, u.Tokens, d.day, need)
	}
	return d, nil
}

// settle replaces the reservation by what the call spent. It is counted
// whatever becomes of the step; a settlement that fails leaves the
// reservation, the larger count, in place.
func (d *dayCharge) settle(ctx context.Context, spent int) {
	if d == nil || spent == d.reserved {
		return
	}
	_, _, _ = d.store.ChargeLLMUsage(context.WithoutCancel(ctx), duet.LLMCharge{UserID: d.user, Day: d.day, Tokens: int64(spent - d.reserved)})
}
