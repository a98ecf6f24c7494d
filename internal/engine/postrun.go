package engine

import (
	"context"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
)

// postRunTimeout bounds all the post-run actions of one run together (each
// call is bounded by the Invoker's own timeout too).
const postRunTimeout = 2 * time.Minute

// verdict is how a run ends, before it is stored.
type verdict struct {
	status duet.RunStatus
	code   duet.Code
	msg    string
}

// postRun makes the post-run actions of task that match how run ends, one
// after the other, as the run's executor through the one Invoker (call
// source post-run), and returns their outcomes. Nothing they do changes
// the verdict: a failed action is a note on the run. execs are the run's
// executions as they ended (nil: read them). A call of an action that
// someone else wrote to a tool that is not read-only needs the executor's
// approval of that version of the actions, as mcpCall steps do.
func (e *Engine) postRun(ctx context.Context, run *duet.Run, task *duet.Task, execs []*duet.Execution, v verdict, secrets *redact.Set) []*duet.PostRunResult {
	var todo []int
	for i, a := range task.PostRun {
		if a.On.Matches(v.status) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	// The run is ending (perhaps because it was cancelled): the actions
	// get their own time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), postRunTimeout)
	defer cancel()
	if execs == nil {
		var err error
		if execs, err = e.store.FindExecutions(ctx, run.ID); err != nil {
			e.log.ErrorContext(ctx, "post-run actions: reading the executions", "run", run.ID, "err", err)
		}
	}
	vars := summaryVars(run, task, execs, v, secrets)
	out := make([]*duet.PostRunResult, 0, len(todo))
	for _, i := range todo {
		a := task.PostRun[i]
		start := time.Now()
		res := &duet.PostRunResult{Index: i, Name: a.Name, ServerKey: a.ServerKey, Tool: a.ToolName, Status: duet.StatusPassed}
		if err := e.postRunAction(ctx, run, task, a, vars); err != nil {
			res.Status, res.ErrorCode, res.ErrorMessage = duet.StatusFailed, duet.ErrorCode(err), secrets.Scrub(duet.ErrorMessage(err))
			if res.ErrorCode == duet.CodeInternal {
				e.log.ErrorContext(ctx, "post-run action", "run", run.ID, "action", a.Name, "err", secrets.Scrub(err.Error()))
			}
		}
		res.DurationMs = time.Since(start).Milliseconds()
		out = append(out, res)
	}
	return out
}

func (e *Engine) postRunAction(ctx context.Context, run *duet.Run, task *duet.Task, a *duet.PostRunAction, vars map[string]any) error {
	executor := run.TriggeredBy
	m := &duet.MCPCallStep{ServerKey: a.ServerKey, ToolName: a.ToolName}
	need, err := NeedsApproval(ctx, e.tools, executor, task.PostRunBy, m)
	if err != nil {
		return err
	}
	if need {
		if err := e.approver.Approve(ctx, ApprovalRequest{
			Executor: executor, Author: task.PostRunBy, RunID: run.ID, TaskID: task.ID, TaskName: task.Name,
			ServerKey: a.ServerKey, Tool: a.ToolName, PostRun: a.Name, PostRunHash: duet.PostRunHash(task.PostRun),
		}); err != nil {
			return err
		}
	}
	args, err := bindArgs(a.InputBindings, func(b duet.Binding) (any, error) { return bindSummary(b, vars) })
	if err != nil {
		return err
	}
	if e.opts.Invoker == nil {
		return duet.Errorf(duet.CodeMCPServerNotConfigured, "%s has not configured MCP server %s", executor, a.ServerKey)
	}
	_, err = e.opts.Invoker.Invoke(ctx, duet.InvokeRequest{
		Executor: executor, ServerKey: a.ServerKey, Tool: a.ToolName,
		Arguments: args, Source: duet.SourcePostRun, TraceID: run.TraceID,
	})
	return err
}

// bindSummary evaluates a post-run input binding over the run's summary:
// a value (string leaves are templates) or a var path.
func bindSummary(b duet.Binding, vars map[string]any) (any, error) {
	if v, ok, err := bindVars(b, vars); ok {
		return v, err
	}
	return nil, duet.Errorf(duet.CodeBindingFailed, "a post-run input cannot bind %s", b.Source)
}

// summaryVars are the variables of post-run inputs: task and run, the
// run's summary as it ends.
func summaryVars(run *duet.Run, task *duet.Task, execs []*duet.Execution, v verdict, secrets *redact.Set) map[string]any {
	counts := map[duet.RunStatus]int{}
	failed := []any{}
	for _, x := range execs {
		st := x.Status
		if !st.Final() {
			st = duet.StatusCancelled // ends with the run (as FinishRun stores it)
			if v.status != duet.StatusCancelled {
				st = duet.StatusSkipped
			}
		}
		counts[st]++
		if st == duet.StatusFailed || st == duet.StatusError {
			failed = append(failed, map[string]any{
				"key": x.CaseKey, "title": x.CaseTitle, "status": string(st),
				"errorCode": string(x.ErrorCode), "errorMessage": secrets.Scrub(x.ErrorMessage),
			})
		}
	}
	r := map[string]any{
		"id": run.ID, "executor": run.TriggeredBy, "status": string(v.status),
		"errorCode": string(v.code), "errorMessage": secrets.Scrub(v.msg),
		"cases": len(execs), "passed": counts[duet.StatusPassed], "failed": counts[duet.StatusFailed],
		"error": counts[duet.StatusError], "cancelled": counts[duet.StatusCancelled], "skipped": counts[duet.StatusSkipped],
		"failedCases": failed,
		// The report, for whoever may see the run: an MCP resource of
		// Duet's server, and the command that writes it.
		"reportUrl":     "duet://runs/" + run.ID + "/report.html",
		"reportCommand": "duet report " + run.ID,
		"durationMs":    int64(0),
	}
	if run.StartedAt != nil {
		r["durationMs"] = time.Since(*run.StartedAt).Milliseconds()
	}
	return map[string]any{
		"task": map[string]any{"id": task.ID, "name": task.Name, "baseUrl": task.BaseURL},
		"run":  r,
	}
}
