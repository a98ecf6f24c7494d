package api

import (
	"bytes"
	"context"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/report"
)

// The most a page or window holds: the REST API refuses more (its
// documented maximum), the Service clamps to it.
const (
	maxRunsPage    = 100  // listRuns
	maxTrendRuns   = 100  // getTrends
	maxRecordsPage = 1000 // listAudit, listInvocations
)

// pageSize is how many items a list's limit n asks for: def when it asks
// for none (0 or less), and never more than most.
func pageSize(n, def, most int) int {
	if n <= 0 {
		return def
	}
	return min(n, most)
}

// RunListIn selects runs.
type RunListIn struct {
	TaskID string         `json:"taskId,omitempty" jsonschema:"only runs of this task"`
	Status duet.RunStatus `json:"status,omitempty" jsonschema:"only runs in this status"`
	Branch string         `json:"branch,omitempty" jsonschema:"only runs whose origin has this branch"`
	Commit string         `json:"commit,omitempty" jsonschema:"only runs whose origin has this commit"`
	Cursor string         `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page"`
	Limit  int            `json:"limit,omitempty" jsonschema:"page size: default 20, at most 100"`
}

// RunSummary is a run in a list.
type RunSummary struct {
	ID           string          `json:"id"`
	TaskID       string          `json:"taskId"`
	TaskName     string          `json:"taskName"`
	Status       duet.RunStatus  `json:"status"`
	Done         bool            `json:"done"`
	TriggeredBy  string          `json:"triggeredBy"`
	CallSource   string          `json:"callSource"`
	CreatedAt    time.Time       `json:"createdAt"`
	DurationMs   int64           `json:"durationMs"`
	ErrorCode    string          `json:"errorCode,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Totals       duet.RunTotals  `json:"totals"`
	Origin       *duet.RunOrigin `json:"origin,omitempty"`
}

// RunList is a page of runs, newest first.
type RunList struct {
	Runs       []RunSummary `json:"runs"`
	Total      int          `json:"total" jsonschema:"how many runs the filter selects, on every page"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// ListRuns lists the runs of the tasks the caller may see, newest first,
// a page at a time. Error messages are shown only to a run's executor.
// Returns INVALID_ARGUMENT for a bad cursor or status.
func (s *Service) ListRuns(ctx context.Context, c duet.Caller, in RunListIn) (RunList, error) {
	return govern(ctx, s, c, "listRuns", in, func(ctx context.Context) (RunList, error) {
		if in.Status != "" && !validStatus(in.Status) {
			return RunList{}, duet.Errorf(duet.CodeInvalidArgument, "unknown run status %q", in.Status)
		}
		taskID, err := s.taskID(ctx, c, in.TaskID)
		if err != nil {
			return RunList{}, err
		}
		f := duet.RunFilter{Viewer: c.UserID, TaskID: taskID, Status: in.Status, Branch: in.Branch, Commit: in.Commit, Cursor: in.Cursor, Limit: in.Limit}
		runs, next, err := s.d.Store.FindRuns(ctx, f)
		if err != nil {
			return RunList{}, err
		}
		total, err := s.d.Store.CountRuns(ctx, f)
		if err != nil {
			return RunList{}, err
		}
		names := map[string]string{}
		out := RunList{Runs: make([]RunSummary, 0, len(runs)), Total: total, NextCursor: next}
		for _, r := range runs {
			duet.DiscloseRun(c.UserID, r)
			name, ok := names[r.TaskID]
			if !ok {
				if t, err := s.d.Store.FindTaskByID(ctx, c.UserID, r.TaskID); err == nil {
					name = t.Name
				}
				names[r.TaskID] = name
			}
			out.Runs = append(out.Runs, runSummary(r, name))
		}
		return out, nil
	})
}

func runSummary(r *duet.Run, taskName string) RunSummary {
	v := RunSummary{ID: r.ID, TaskID: r.TaskID, TaskName: taskName, Status: r.Status, Done: r.Status.Final(), TriggeredBy: r.TriggeredBy,
		CallSource: string(r.CallSource), CreatedAt: r.CreatedAt, ErrorCode: string(r.ErrorCode), ErrorMessage: r.ErrorMessage, Totals: r.Totals, Origin: r.Origin}
	if r.StartedAt != nil {
		end := time.Now()
		if r.FinishedAt != nil {
			end = *r.FinishedAt
		}
		v.DurationMs = end.Sub(*r.StartedAt).Milliseconds()
	}
	return v
}

func validStatus(s duet.RunStatus) bool {
	switch s {
	case duet.StatusQueued, duet.StatusRunning, duet.StatusPassed, duet.StatusFailed, duet.StatusError, duet.StatusCancelled:
		return true
	}
	return false
}

// StartRun starts a run of a task as the caller (start_test_run): the
// idempotency key makes a retry return the first run. Returns NOT_FOUND,
// INVALID_ARGUMENT, IDEMPOTENCY_CONFLICT, RATE_LIMITED.
func (s *Service) StartRun(ctx context.Context, c duet.Caller, in catalog.StartRunIn) (catalog.StartRunOut, error) {
	return tool[catalog.StartRunOut](ctx, s, c, catalog.ToolStartRun, in)
}

// StartRunFrom is StartRun for a run started by a CI job: origin (its
// commit, branch, pull request and pipeline) is kept on the run.
func (s *Service) StartRunFrom(ctx context.Context, c duet.Caller, in catalog.StartRunIn, origin *duet.RunOrigin) (catalog.StartRunOut, error) {
	return toolWith[catalog.StartRunOut](ctx, s, catalog.Request{Caller: c, Tool: catalog.ToolStartRun, Origin: origin}, in)
}

// GetRun returns a run with a page of its executions (get_test_run).
func (s *Service) GetRun(ctx context.Context, c duet.Caller, in catalog.GetRunIn) (catalog.GetRunOut, error) {
	return tool[catalog.GetRunOut](ctx, s, c, catalog.ToolGetRun, in)
}

// RunNumber returns a run's number in its task: 1 for the task's first
// run, counted over the runs of the task c may see (every run of a task
// visible to c). A run c cannot see is NOT_FOUND, as for GetRun.
func (s *Service) RunNumber(ctx context.Context, c duet.Caller, runID string) (int, error) {
	return govern(ctx, s, c, "getRun", map[string]string{"runId": runID}, func(ctx context.Context) (int, error) {
		run, err := s.d.Store.FindRunByID(ctx, c.UserID, runID)
		if err != nil {
			return 0, err
		}
		return s.d.Store.CountRuns(ctx, duet.RunFilter{Viewer: c.UserID, TaskID: run.TaskID, UpTo: run.ID})
	})
}

// GetExecution returns one case execution with its steps
// (get_execution_result).
func (s *Service) GetExecution(ctx context.Context, c duet.Caller, executionID string) (catalog.GetExecutionOut, error) {
	return tool[catalog.GetExecutionOut](ctx, s, c, catalog.ToolGetExecutionResult, catalog.GetExecutionIn{ExecutionID: executionID})
}

// CancelRun asks a run to stop: a queued run is cancelled at once, a
// running one by its worker within a second. The person who started it or
// the task's owner may cancel it (catalog.CancelRun). Returns NOT_FOUND,
// PERMISSION_DENIED.
func (s *Service) CancelRun(ctx context.Context, c duet.Caller, runID string) (RunSummary, error) {
	return govern(ctx, s, c, "cancelRun", nil, func(ctx context.Context) (RunSummary, error) {
		r, err := s.d.Catalog.CancelRun(ctx, c, runID)
		if err != nil {
			return RunSummary{}, err
		}
		duet.DiscloseRun(c.UserID, r)
		return runSummary(r, s.taskName(ctx, c, r.TaskID)), nil
	})
}

// taskName returns the name of a task the caller may see ("" when it is
// gone).
func (s *Service) taskName(ctx context.Context, c duet.Caller, taskID string) string {
	if t, err := s.d.Store.FindTaskByID(ctx, c.UserID, taskID); err == nil {
		return t.Name
	}
	return ""
}

// Report is a rendered run report.
type Report struct {
	ContentType string
	Body        []byte
	// The run it reports on, and the part of it shown when that is not
	// all of it (REST: the Duet-Report-* headers).
	RunID  string
	Status duet.RunStatus
	Totals report.Totals
	Window *report.Window
}

// RunReport renders the report of a run as the caller sees it (the same
// report as `duet report`: HTML with screenshots inline, JSON or JUnit
// XML), a page of at most report.MaxCases cases. Returns NOT_FOUND,
// INVALID_ARGUMENT.
func (s *Service) RunReport(ctx context.Context, c duet.Caller, runID string, format report.Format, cursor string) (Report, error) {
	return s.RunReportPage(ctx, c, runID, format, report.Page{Cursor: cursor})
}

// RunReportPage is RunReport of the part of the run page selects (at most
// 1000 cases). Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) RunReportPage(ctx context.Context, c duet.Caller, runID string, format report.Format, page report.Page) (Report, error) {
	var out Report
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "getReport", Name: string(format)}, func(ctx context.Context) (int, error) {
		if page.Limit < 0 || page.Limit > 1000 {
			return 0, duet.Errorf(duet.CodeInvalidArgument, "limit: want 1 to 1000 cases")
		}
		r, err := report.BuildPage(ctx, s.d.Store, s.d.Artifacts, c.UserID, runID, page)
		if err != nil {
			return 0, err
		}
		out.RunID, out.Status, out.Totals, out.Window = r.Run.ID, r.Run.Status, r.Totals(), r.Window
		buf := catalog.NewBudgetBuffer(ctx) // stops at the call's result budget
		if err := r.Write(buf, format); err != nil {
			return 0, err
		}
		out.Body = buf.Bytes()
		switch format {
		case report.JSON:
			out.ContentType = "application/json"
		case report.JUnit:
			out.ContentType = "application/xml"
		default:
			out.ContentType = "text/html; charset=utf-8"
		}
		return len(out.Body), nil
	})
	return out, err
}

// RunJUnitZip renders the JUnit report of a run as the caller sees it
// with the attachments of its failed cases — screenshots and traces, the
// executor's only — as one zip (report.WriteJUnitZip): junit.xml and
// junit-attachments/, the paths its system-out names. The attachments
// stop at three quarters of the call's result budget; those left out are
// named with the reason. Returns NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) RunJUnitZip(ctx context.Context, c duet.Caller, runID, cursor string) (Report, error) {
	var out Report
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "getReport", Name: "junit.zip"}, func(ctx context.Context) (int, error) {
		r, err := report.BuildPage(ctx, s.d.Store, s.d.Artifacts, c.UserID, runID, report.Page{Cursor: cursor})
		if err != nil {
			return 0, err
		}
		limit := 0
		if b := catalog.ResultBudget(ctx); b > 0 {
			limit = b / 4 * 3
		}
		buf := catalog.NewBudgetBuffer(ctx)
		if err := report.WriteJUnitZip(ctx, r, report.ArtifactSource(s.d.Artifacts, r.Run.ID), buf, limit); err != nil {
			return 0, err
		}
		out.Body, out.ContentType = buf.Bytes(), "application/zip"
		out.RunID, out.Status, out.Totals, out.Window = r.Run.ID, r.Run.Status, r.Totals(), r.Window
		return len(out.Body), nil
	})
	return out, err
}

// JUnitWritten is what WriteJUnitFiles wrote: how many attachments, and
// the part of the run the JUnit file shows when that is not all of it.
type JUnitWritten struct {
	Attached int
	Window   *report.Window
}

// WriteJUnitFiles writes the JUnit report of a run as the caller sees it
// to f.Path on this machine, with the attachments of its failed cases —
// screenshots and traces, the executor's only — into f.AttachmentsDir()
// (report.WriteJUnitFiles): what `duet run --junit` writes in this
// process (a remote client unpacks RunJUnitZip instead). Governed and
// audited as getReport. Returns NOT_FOUND, INVALID_ARGUMENT; an error
// writing the files is the file system's (no duet.Code).
func (s *Service) WriteJUnitFiles(ctx context.Context, c duet.Caller, runID string, page report.Page, f report.JUnitFiles) (JUnitWritten, error) {
	var out JUnitWritten
	var fsErr error
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: "getReport", Name: "junit.files"}, func(ctx context.Context) (int, error) {
		r, err := report.BuildPage(ctx, s.d.Store, s.d.Artifacts, c.UserID, runID, page)
		if err != nil {
			return 0, err
		}
		out.Window = r.Window
		out.Attached, fsErr = report.WriteJUnitFiles(ctx, r, report.ArtifactSource(s.d.Artifacts, r.Run.ID), f)
		return 0, nil
	})
	if err != nil {
		return out, err
	}
	return out, fsErr
}

// Progress is one state of a run followed live.
type Progress struct {
	Run        RunSummary                 `json:"run"`
	Executions []catalog.ExecutionSummary `json:"executions" jsonschema:"the run's first 200 executions, in order (get_test_run pages them all)"`
	Current    string                     `json:"current,omitempty" jsonschema:"the case and step running now"`
	// Steps are the steps that finished since the stream's previous event
	// (all those finished so far in its first): a client prints each once.
	Steps []StepProgress `json:"steps,omitempty" jsonschema:"the steps of the first 200 executions that finished since the previous event of this stream (in the first event: all finished so far)"`
}

// StepProgress is a finished step of a run followed live.
type StepProgress struct {
	ExecutionID  string         `json:"executionId" jsonschema:"the execution, or run:beforeAll / run:afterAll for the run's own hooks"`
	CaseTitle    string         `json:"caseTitle" jsonschema:"the case's title, or beforeAll / afterAll"`
	Index        int            `json:"index" jsonschema:"from 0"`
	Name         string         `json:"name"`
	Hook         string         `json:"hook,omitempty" jsonschema:"the hook the step belongs to (beforeEach, afterEach, ...), if any"`
	Status       duet.RunStatus `json:"status"`
	Optional     bool           `json:"optional,omitempty" jsonschema:"it failed, and the case went on (a warning)"`
	DurationMs   int64          `json:"durationMs"`
	ErrorCode    string         `json:"errorCode,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty" jsonschema:"shown only to the run's executor"`
	Branch       string         `json:"branch,omitempty" jsonschema:"the branch an if step took"`
	Iterations   int            `json:"iterations,omitempty" jsonschema:"the iterations a loop step began"`
	// Children are the steps a flow step ran, as get_execution_result
	// shows them.
	Children duet.StepResults `json:"children,omitempty" jsonschema:"the steps a flow step (if, repeat, forEach, flow) ran under it"`
	Omitted  int              `json:"omitted,omitempty" jsonschema:"passed steps under it not kept"`
}

// stepProgress is the progress line of a finished step.
func stepProgress(id, title string, res *duet.StepResult) StepProgress {
	return StepProgress{ExecutionID: id, CaseTitle: title, Index: res.Index, Name: res.Name, Hook: res.Hook, Status: res.Status,
		Optional: res.Optional, DurationMs: res.DurationMs, ErrorCode: string(res.ErrorCode), ErrorMessage: res.ErrorMessage,
		Branch: res.Branch, Iterations: res.Iterations, Children: res.Children, Omitted: res.Omitted}
}

// finishedSteps appends to p the results of id not sent yet, up to the
// first still running (a flow step in progress), and returns how many of
// results are sent now.
func finishedSteps(p *Progress, id, title string, results []*duet.StepResult, sent int) int {
	for _, res := range results[min(sent, len(results)):] {
		if !res.Status.Final() {
			break
		}
		p.Steps = append(p.Steps, stepProgress(id, title, res))
		sent++
	}
	return sent
}

// stepsSent is what one progress stream has sent of each execution's
// steps: how many, and whether the execution was final then (nothing more
// to read).
type stepsSent struct {
	n    map[string]int
	done map[string]bool
}

// progressPoll is how often FollowRun reads the run.
const progressPoll = 300 * time.Millisecond

// FollowRun sends the progress of a run to send — at once, then whenever
// it changes — until the run is final, ctx ends, send fails or the stream
// has lasted Limits.StreamTimeout (a client reconnects). It is governed as
// a stream (catalog.Op.Stream: audited when it ends), and takes one of the
// catalog's stream slots, the budget MCP's subscriptions/listen streams
// share: at most Limits.MaxPerCaller streams per caller and
// Limits.MaxConcurrent in all are open at once (each reads the run every
// progressPoll). Returns NOT_FOUND, RATE_LIMITED.
func (s *Service) FollowRun(ctx context.Context, c duet.Caller, runID string, send func(Progress) error) error {
	op := catalog.Op{Caller: c, Method: "followRun", Stream: true}
	slot, err := s.d.Catalog.Admit(op)
	if err != nil {
		return err // audited
	}
	defer slot.Release()
	op.Slot = slot
	ctx, cancel := context.WithTimeout(ctx, s.d.Catalog.Limits().StreamTimeout)
	defer cancel()
	return s.d.Catalog.Govern(ctx, op, func(ctx context.Context) (int, error) {
		t := time.NewTicker(progressPoll)
		defer t.Stop()
		var last []byte
		sent, name := 0, ""
		steps := &stepsSent{n: map[string]int{}, done: map[string]bool{}}
		for {
			p, err := s.progress(ctx, c, runID, &name, steps)
			if err != nil {
				if ctx.Err() != nil {
					return sent, nil
				}
				return sent, err
			}
			b, _ := jsonMarshal(p)
			if !bytes.Equal(b, last) {
				if err := send(p); err != nil {
					return sent, nil
				}
				last, sent = b, sent+len(b)
			}
			if p.Run.Done {
				return sent, nil
			}
			select {
			case <-ctx.Done():
				return sent, nil
			case <-t.C:
			}
		}
	})
}

// progressExecutions is how many executions a Progress lists (the first
// ones, in order): a run's page shows as many; get_test_run pages the rest.
const progressExecutions = 200

// progress reads the state of a run; *taskName is its task's name, read
// at the first call; steps is what the stream has sent of each
// execution's steps.
func (s *Service) progress(ctx context.Context, c duet.Caller, runID string, taskName *string, steps *stepsSent) (Progress, error) {
	r, err := s.d.Store.FindRunByID(ctx, c.UserID, runID)
	if err != nil {
		return Progress{}, err
	}
	if *taskName == "" {
		*taskName = s.taskName(ctx, c, r.TaskID)
	}
	execs, _, err := s.d.Store.FindExecutionPage(ctx, duet.ExecutionFilter{RunID: r.ID, Limit: progressExecutions})
	if err != nil {
		return Progress{}, err
	}
	duet.DiscloseRun(c.UserID, r, execs...)
	p := Progress{Run: runSummary(r, *taskName), Executions: make([]catalog.ExecutionSummary, 0, len(execs))}
	running := ""
	for _, x := range execs {
		es := catalog.ExecutionSummary{ID: x.ID, CaseID: x.CaseID, CaseKey: x.CaseKey, CaseTitle: x.CaseTitle, Status: x.Status,
			ErrorCode: string(x.ErrorCode), ErrorMessage: x.ErrorMessage}
		if x.StartedAt != nil && x.FinishedAt != nil {
			es.DurationMs = x.FinishedAt.Sub(*x.StartedAt).Milliseconds()
		}
		p.Executions = append(p.Executions, es)
		if x.Status == duet.StatusRunning && running == "" {
			running = x.ID
		}
	}
	// The run's beforeAll and afterAll, as a case of their own each.
	hooks := map[string][]*duet.StepResult{}
	for _, h := range r.Hooks {
		hooks[h.Hook] = append(hooks[h.Hook], h)
	}
	hook := func(name string) {
		id := "run:" + name
		steps.n[id] = finishedSteps(&p, id, name, hooks[name], steps.n[id])
	}
	hook(duet.HookBeforeAll)
	for _, x := range execs {
		// The results of the executions that ran since the last read:
		// running ones, and final ones not read since they ended.
		if steps.done[x.ID] || x.Status == duet.StatusPending || x.Status == duet.StatusQueued {
			continue
		}
		full, err := s.d.Store.FindExecutionByID(ctx, c.UserID, x.ID)
		if err != nil {
			return Progress{}, err
		}
		duet.DiscloseRun(c.UserID, r, full)
		steps.n[x.ID] = finishedSteps(&p, x.ID, full.CaseTitle, full.Results, steps.n[x.ID])
		steps.done[x.ID] = full.Status.Final() && steps.n[x.ID] == len(full.Results)
		if x.ID == running {
			// The step running now: from that execution's results.
			p.Current = full.CaseTitle
			if n := len(full.Results); n > 0 {
				p.Current += " — step " + itoa(full.Results[n-1].Index+1) + " of " + itoa(len(full.Steps)) + ": " + full.Results[n-1].Name
			}
		}
	}
	hook(duet.HookAfterAll)
	return p, nil
}

// RunExitIn asks for the exit code of a finished run.
type RunExitIn struct {
	FailOnFlaky bool `json:"failOnFlaky,omitempty"`
}

// RunExit is the exit code of a run for a CI job (report.ExitCode over
// every execution of the run, not one page): 0 passed, 1 failures (with
// failOnFlaky, a flaky case too), 2 usage or configuration, 3
// infrastructure — what `duet run --wait` exits with, locally and against
// a server alike. Returns NOT_FOUND; CONFLICT while the run has
// not finished.
func (s *Service) RunExit(ctx context.Context, c duet.Caller, runID string, in RunExitIn) (report.Exit, error) {
	return govern(ctx, s, c, "getRunExit", in, func(ctx context.Context) (report.Exit, error) {
		r, err := s.d.Store.FindRunByID(ctx, c.UserID, runID)
		if err != nil {
			return report.Exit{}, err
		}
		if !r.Status.Final() {
			return report.Exit{}, duet.Errorf(duet.CodeConflict, "run %s is %s: its exit code is known once it ends", r.ID, r.Status)
		}
		execs, err := s.d.Store.FindExecutions(ctx, r.ID)
		if err != nil {
			return report.Exit{}, err
		}
		code, why := report.ExitCode(r, execs, in.FailOnFlaky)
		return report.Exit{Code: code, Reason: why}, nil
	})
}
