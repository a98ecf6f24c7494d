package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/step"
)

// runScope is what every case of a run starts with: the task as the run's
// environment makes it (its base URL), the built-in variables, what the
// task's beforeAll steps saved, and the run's secrets.
type runScope struct {
	run      *duet.Run
	task     *duet.Task // the task, with the environment's base URL
	secrets  *redact.Set
	env      map[string]any // the environment's variables (env)
	hookVars map[string]any // what beforeAll saved
	// aiTokens counts the tokens the run's AI steps spent, against
	// step.AIConfig.RunTokens; aiTime how long they waited for the model
	// (nanoseconds), against step.AIConfig.RunTime.
	aiTokens, aiTime atomic.Int64
}

// newRunScope resolves the run's environment in task. Returns
// INVALID_ARGUMENT when the task no longer has it.
func newRunScope(run *duet.Run, task *duet.Task, secrets *redact.Set) (*runScope, error) {
	rs := &runScope{run: run, task: task, secrets: secrets, env: map[string]any{}}
	_, env, err := task.Environment(run.Environment)
	if err != nil {
		return nil, err
	}
	if env != nil {
		t := *task
		if env.BaseURL != "" {
			t.BaseURL = env.BaseURL
		}
		rs.task = &t
		maps.Copy(rs.env, env.Vars)
	}
	return rs, nil
}

// builtins returns the variables a case (or a hook) of the run starts
// with.
func (rs *runScope) builtins() map[string]any {
	t := rs.task
	vars := map[string]any{
		"task": map[string]any{"id": t.ID, "name": t.Name, "baseUrl": t.BaseURL},
		"run":  map[string]any{"id": rs.run.ID, "executor": rs.run.TriggeredBy, "environment": rs.run.Environment},
		"env":  maps.Clone(rs.env),
	}
	for k, v := range rs.hookVars {
		if _, builtin := vars[k]; !builtin {
			vars[k] = v
		}
	}
	return vars
}

// runHooks is the state of a run's beforeAll or afterAll while its steps
// run: their results are the run's (Run.Hooks), stored with
// SaveRunHooks.
type runHooks struct {
	hook string // duet.HookBeforeAll or duet.HookAfterAll
	run  *duet.Run
	w    *runWrites
	e    *Engine
}

// store stores res, a result of the hook's steps, among the run's hook
// results (replacing the one of the same hook and index), with the
// variables beforeAll saved.
func (h *runHooks) store(ctx context.Context, cr *caseRun, res *duet.StepResult) bool {
	all := h.run.Hooks
	i := slices.IndexFunc(all, func(r *duet.StepResult) bool { return r.Hook == res.Hook && r.Index == res.Index })
	if i >= 0 {
		all[i] = res
	} else {
		all = append(all, res)
	}
	h.run.Hooks = all
	vars := h.run.HookVars
	if h.hook == duet.HookBeforeAll {
		vars = cr.persistVars()
	}
	if err := h.w.do(ctx, func(ctx context.Context, l duet.Lease) error { return h.e.store.SaveRunHooks(ctx, l, all, vars) }); err != nil {
		h.e.log.ErrorContext(ctx, "saving a hook's step result", "run", h.run.ID, "hook", h.hook, "step", res.Index, "err", cr.secrets.Scrub(err.Error()))
		return false
	}
	h.run.HookVars = vars
	return true
}

// checkApproval applies to a call of the task's hooks the rule of its
// post-run actions: written by someone else (HooksBy), a call with the
// executor's credentials needs the executor's approval of that version of
// the hooks (duet task approve-post-run approves both).
func (h *runHooks) checkApproval(ctx context.Context, cr *caseRun, m *duet.MCPCallStep) error {
	executor := h.run.TriggeredBy
	need, err := NeedsApproval(ctx, h.e.tools, executor, cr.task.HooksBy, m)
	if err != nil || !need {
		return err
	}
	return h.e.approver.Approve(ctx, ApprovalRequest{
		Executor: executor, Author: cr.task.HooksBy, RunID: h.run.ID, TaskID: cr.task.ID, TaskName: cr.task.Name,
		ServerKey: m.ServerKey, Tool: m.ToolName, PostRun: h.hook + " hook", PostRunHash: duet.HooksHash(cr.task),
	})
}

// runHook runs the task's steps of hook (beforeAll or afterAll) for the
// run under ctx, storing each result among the run's hook results. It
// returns the variables the steps saved, and, when a step failed, the
// failure: the status, and a message naming the hook and the step.
func (e *Engine) runHook(ctx context.Context, w *runWrites, rs *runScope, hook string, steps []duet.Step) (vars map[string]any, status duet.RunStatus, msg string) {
	run := rs.run
	// Earlier results of this hook (an earlier attempt at the run) are
	// replaced.
	run.Hooks = slices.DeleteFunc(run.Hooks, func(r *duet.StepResult) bool { return r.Hook == hook })
	x := &duet.Execution{ID: run.ID, RunID: run.ID, CaseTitle: hook, Steps: steps}
	cr := &caseRun{e: e, w: w, run: run, task: rs.task, x: x, saved: map[string]any{}, secrets: rs.secrets, vars: rs.builtins(),
		hooks: &runHooks{hook: hook, run: run, w: w, e: e}, aiTokens: &rs.aiTokens, aiTime: &rs.aiTime}
	cr.loadSecrets(ctx, steps)
	defer cr.end()
	status = duet.StatusPassed
	for i := range steps {
		st := &steps[i]
		res := &duet.StepResult{Index: st.Index, Kind: st.Kind, Name: st.Name, Hook: hook, Status: duet.StatusSkipped}
		if status == duet.StatusPassed && ctx.Err() == nil {
			cr.runStep(ctx, st, res)
		}
		if handedBack(ctx) {
			return nil, "", ""
		}
		res.ErrorMessage = cr.secrets.Scrub(res.ErrorMessage)
		if !cr.hooks.store(ctx, cr, res) {
			return nil, "", ""
		}
		if status == duet.StatusPassed && res.Status != duet.StatusPassed && res.Status != duet.StatusSkipped && !res.Optional {
			status, msg = res.Status, cr.secrets.Scrub(fmt.Sprintf("%s hook failed at step %d (%s): %s: %s", hook, st.Index+1, st.Name, res.ErrorCode, res.ErrorMessage))
		}
	}
	if status == duet.StatusPassed && ctx.Err() != nil {
		status, msg = duet.StatusCancelled, hook+" hook: cancelled"
	}
	vars = map[string]any{}
	maps.Copy(vars, cr.saved)
	return vars, status, msg
}

// beforeAllDone returns the variables of the run's beforeAll when an
// earlier attempt at the run stored it whole — every step passed, none
// drove a browser, its variables stored unredacted — so that it need not
// run again; ok false otherwise.
func beforeAllDone(run *duet.Run, task *duet.Task) (vars map[string]any, ok bool) {
	var got []*duet.StepResult
	for _, r := range run.Hooks {
		if r.Hook == duet.HookBeforeAll {
			got = append(got, r)
		}
	}
	if len(got) != len(task.BeforeAll) || len(got) == 0 {
		return nil, false
	}
	for i, r := range got {
		if r.Index != i || r.Status != duet.StatusPassed && !r.Optional || step.UsesBrowser(&task.BeforeAll[i]) {
			return nil, false
		}
	}
	b, err := json.Marshal(run.HookVars)
	if err != nil || bytes.Contains(b, []byte(redact.Mask)) {
		return nil, false
	}
	return run.HookVars, true
}

// skipExecution ends x, a case that cannot run (the run's beforeAll
// failed), with status, code and msg, each of its steps skipped.
func (e *Engine) skipExecution(ctx context.Context, w *runWrites, x *duet.Execution, status duet.RunStatus, code duet.Code, msg string) bool {
	now := time.Now()
	x.StartedAt, x.ResumeFrom = &now, 0
	if err := w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.StartExecution(ctx, l, x) }); err != nil {
		return false
	}
	x.Results = nil
	for _, st := range x.Steps {
		res := &duet.StepResult{Index: st.Index, Kind: st.Kind, Name: st.Name, Hook: st.Hook, Status: duet.StatusSkipped}
		x.Results = append(x.Results, res)
		if err := w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.SaveStepResult(ctx, l, x.ID, res, nil) }); err != nil {
			return false
		}
	}
	x.Status, x.ErrorCode, x.ErrorMessage, x.FinishedAt = status, code, msg, &now
	return w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.FinishExecution(ctx, l, x) }) == nil
}
