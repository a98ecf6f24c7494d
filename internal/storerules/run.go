package storerules

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/duet-test/duet"
)

// Rows is the cursor both engines' queries return (database/sql's *Rows,
// pgx's Rows): the readers below fill objects from it; the driver closes
// it and maps its errors.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// AddTotal counts n executions of status st in t.
func AddTotal(t *duet.RunTotals, st duet.RunStatus, n int) {
	t.Cases += n
	switch st {
	case duet.StatusPending:
		t.Pending += n
	case duet.StatusRunning:
		t.Running += n
	case duet.StatusPassed:
		t.Passed += n
	case duet.StatusFlaky:
		t.Flaky += n
	case duet.StatusFailed:
		t.Failed += n
	case duet.StatusError:
		t.Error += n
	case duet.StatusCancelled, duet.StatusSkipped:
		t.Cancelled += n
	}
}

// FillTotals counts, on e, the executions of each run by status into its
// totals.
func FillTotals(ctx context.Context, e Engine, runs ...*duet.Run) error {
	if len(runs) == 0 {
		return nil
	}
	byID, ids := RunsByID(runs)
	for _, r := range byID {
		r.Totals = duet.RunTotals{}
	}
	in, args := e.In("run_id", ids)
	return e.Query(ctx, func(r Row) error {
		var id string
		var st duet.RunStatus
		var n int
		if err := r.Scan(&id, &st, &n); err != nil {
			return err
		}
		AddTotal(&byID[id].Totals, st, n)
		return nil
	}, `SELECT run_id, status, count(*) FROM executions WHERE `+in+` GROUP BY run_id, status`, args...)
}

// RunsByID indexes runs by id; ids lists each once, in order.
func RunsByID(runs []*duet.Run) (byID map[string]*duet.Run, ids []string) {
	return index(runs, func(r *duet.Run) string { return r.ID })
}

// DecodeRun completes a run scanned from the runs table with its stored
// origin, post-run results and hooks' results.
func DecodeRun(run *duet.Run, o duet.RunOrigin, postRun, hooks string) error {
	if err := DecodeRunHooks(run, hooks); err != nil {
		return err
	}
	if !o.Empty() {
		run.Origin = &o
	}
	if postRun != "" {
		if err := json.Unmarshal([]byte(postRun), &run.PostRun); err != nil {
			return fmt.Errorf("run %s: decoding post-run results: %w", run.ID, err)
		}
	}
	return nil
}

// DecodeExecution completes an execution scanned from the executions table
// with its stored steps, variables and data row.
func DecodeExecution(e *duet.Execution, steps, vars, row string) error {
	var err error
	if e.Row, err = DecodeRow(row); err != nil {
		return fmt.Errorf("execution %s: decoding its data row: %w", e.ID, err)
	}
	if err := json.Unmarshal([]byte(steps), &e.Steps); err != nil {
		return fmt.Errorf("execution %s: decoding steps: %w", e.ID, err)
	}
	if err := json.Unmarshal([]byte(vars), &e.Vars); err != nil {
		return fmt.Errorf("execution %s: decoding variables: %w", e.ID, err)
	}
	e.Results = []*duet.StepResult{}
	return nil
}

// ExecutionsByID indexes executions by id; ids lists each once, in order.
func ExecutionsByID(execs []*duet.Execution) (byID map[string]*duet.Execution, ids []string) {
	return index(execs, func(e *duet.Execution) string { return e.ID })
}

// AddResult appends the stored step result data to e's results.
func AddResult(e *duet.Execution, data string) error {
	return appendJSON(&e.Results, data, "step result of "+e.ID)
}

// AddAttempt appends the stored earlier attempt data to e's attempts.
func AddAttempt(e *duet.Execution, data string) error {
	return appendJSON(&e.Attempts, data, "attempt of "+e.ID)
}

// appendJSON appends the value stored as data to list; what names it in
// an error.
func appendJSON[T any](list *[]*T, data, what string) error {
	var v T
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	*list = append(*list, &v)
	return nil
}

// LoadResults reads, on e, the step results and earlier attempts of the
// executions into them.
func LoadResults(ctx context.Context, e Engine, execs ...*duet.Execution) error {
	if len(execs) == 0 {
		return nil
	}
	byID, ids := ExecutionsByID(execs)
	for _, r := range []struct {
		table, order string
		add          func(*duet.Execution, string) error
	}{
		{"step_results", "idx", AddResult},
		// The earlier attempts of executions that were retried.
		{"execution_attempts", "attempt", AddAttempt},
	} {
		in, args := e.In("execution_id", ids)
		if err := e.Query(ctx, func(row Row) error {
			var id, data string
			if err := row.Scan(&id, &data); err != nil {
				return err
			}
			return r.add(byID[id], data)
		}, `SELECT execution_id, data FROM `+r.table+` WHERE `+in+` ORDER BY execution_id, `+r.order, args...); err != nil {
			return err
		}
	}
	return nil
}

// CheckRun refuses a run no engine may store: no task, user or case.
func CheckRun(p duet.StartRunParams) error {
	run := p.Run
	if run == nil || run.TaskID == "" || run.TriggeredBy == "" {
		return duet.Errorf(duet.CodeInvalidArgument, "a run needs a task and a user")
	}
	if len(p.Executions) == 0 {
		return duet.Errorf(duet.CodeInvalidArgument, "the run has no cases to execute")
	}
	return nil
}

// RunPlan is what CreateRun writes, decided once: the queued run with its
// id and totals, its pending executions with their ids and ordinals, their
// encoded steps and data rows, and the idempotency record to keep, if any,
// with the result a replay returns.
type RunPlan struct {
	Run         *duet.Run
	Steps, Rows []string // of p.Executions, in order
	Idempotency *duet.IdempotencyRecord
}

// PlanRun makes the plan of p, checked by CheckRun, created at now (at the
// engine's precision).
func PlanRun(p duet.StartRunParams, now time.Time) (*RunPlan, error) {
	run := p.Run
	run.ID, run.Status, run.CreatedAt = duet.NewID("run"), duet.StatusQueued, now
	n := len(p.Executions)
	plan := &RunPlan{Run: run, Steps: make([]string, n), Rows: make([]string, n)}
	for i, e := range p.Executions {
		b, err := json.Marshal(e.Steps)
		if err != nil {
			return nil, err
		}
		plan.Steps[i] = string(b)
		e.ID, e.RunID, e.Ordinal, e.Status, e.Attempt = duet.NewID("exec"), run.ID, i, duet.StatusPending, 1
		e.Retries = max(e.Retries, 0)
		if plan.Rows[i], err = EncodeRow(e.Row); err != nil {
			return nil, err
		}
	}
	run.Totals = duet.RunTotals{Cases: n, Pending: n}
	if p.Idempotency == nil {
		return plan, nil
	}
	rec := p.Idempotency
	rec.CreatedAt = now
	if rec.ExpiresAt.IsZero() {
		rec.ExpiresAt = now.Add(24 * time.Hour)
	}
	if p.ResultFunc != nil {
		b, err := p.ResultFunc(run)
		if err != nil {
			return nil, err
		}
		rec.Result = b
	}
	if rec.Result == nil {
		rec.Result = json.RawMessage(`{}`)
	}
	plan.Idempotency = rec
	return plan, nil
}

// Replay decides a start that found the stored idempotency record old for
// its key: the same tool and arguments replay it, others are refused.
func Replay(old, in *duet.IdempotencyRecord) error {
	if old.ArgsHash != in.ArgsHash || old.Tool != in.Tool {
		return duet.Errorf(duet.CodeIdempotencyConflict, "idempotency key %q was already used with different arguments", in.Key)
	}
	return nil
}

// PerMinuteError is the refusal of a run beyond StartRunParams.MaxPerMinute:
// user started n runs since a minute before now, the first at oldest.
func PerMinuteError(user string, n int, oldest, now time.Time) error {
	wait := max(oldest.Add(time.Minute).Sub(now), time.Second).Round(time.Second)
	return duet.Errorf(duet.CodeRateLimited, "%s started %d runs in the last minute, the most one user may start (DUET_MAX_RUNS_PER_MINUTE); the next may start in %s", user, n, wait)
}

// QueuedError is the refusal of a run beyond StartRunParams.MaxQueued: user
// has n runs queued.
func QueuedError(user string, n int) error {
	return duet.Errorf(duet.CodeRateLimited, "%s already has %d runs queued, the most one user may have waiting; start more when some have started, or cancel some", user, n)
}

// SlotTaken is the refusal of a schedule's run whose slot another start
// claimed first.
func SlotTaken(f *duet.ScheduleFire) error {
	return duet.Errorf(duet.CodeConflict, "the slot %s of schedule %s was already claimed", f.Slot.UTC().Format(time.RFC3339), f.ScheduleID)
}

// EncodePostRunResults is how a run's post-run results are stored: JSON,
// or "" for none.
func EncodePostRunResults(r *duet.Run) (string, error) {
	if len(r.PostRun) == 0 {
		return "", nil
	}
	b, err := json.Marshal(r.PostRun)
	return string(b), err
}

// FinishTx is what FinishRun asks of one engine's transaction.
type FinishTx interface {
	// HeldRun checks (and on engines with row locks, locks) the run l
	// holds: LEASE_LOST when it does not.
	HeldRun(ctx context.Context, l duet.Lease) error
	// Incomplete finds an execution of the run a verdict cannot summarise
	// (unfinished, or with fewer step results than steps); ok false if
	// none.
	Incomplete(ctx context.Context, runID string) (title string, status duet.RunStatus, res, n int, ok bool, err error)
	// EndExecutions gives the run's pending and running executions status.
	EndExecutions(ctx context.Context, runID string, status duet.RunStatus) error
	// EndRun writes r's final state and post-run results, and releases its
	// lease.
	EndRun(ctx context.Context, runID string, r *duet.Run, postRun string) error
	// Totals counts r's executions into r.Totals.
	Totals(ctx context.Context, r *duet.Run) error
	// RunFinished enqueues the deliveries of the task's webhooks of the
	// run's end.
	RunFinished(ctx context.Context, runID string, status duet.RunStatus, flaky int, now time.Time) error
}

// FinishRun stores the final state of l's run r through tx (fenced; a
// verdict only over every result): executions that never finished end
// with the run — cancelled when it was cancelled, skipped otherwise — and
// the task's webhooks learn of the end in the same transaction, so a
// delivery is never lost to a crash.
func FinishRun(ctx context.Context, tx FinishTx, l duet.Lease, r *duet.Run, now time.Time) error {
	if err := tx.HeldRun(ctx, l); err != nil {
		return err
	}
	if r.Status == duet.StatusPassed || r.Status == duet.StatusFailed {
		title, status, res, n, ok, err := tx.Incomplete(ctx, l.RunID)
		if err != nil {
			return err
		}
		if ok {
			return duet.Incomplete(l.RunID, title, status, res, n)
		}
	}
	rest := duet.StatusSkipped
	if r.Status == duet.StatusCancelled {
		rest = duet.StatusCancelled
	}
	if err := tx.EndExecutions(ctx, l.RunID, rest); err != nil {
		return err
	}
	postRun, err := EncodePostRunResults(r)
	if err != nil {
		return err
	}
	if err := tx.EndRun(ctx, l.RunID, r, postRun); err != nil {
		return err
	}
	if err := tx.Totals(ctx, r); err != nil {
		return err
	}
	return tx.RunFinished(ctx, l.RunID, r.Status, r.Totals.Flaky, now)
}

// CancelTx is what RequestCancel asks of one engine's transaction.
type CancelTx interface {
	// VisibleRun reads (and on engines with row locks, locks) the run if
	// viewer may see it ("" = any), or NOT_FOUND.
	VisibleRun(ctx context.Context, viewer, runID string) (*duet.Run, error)
	// EndExecutions gives the run's pending and running executions status.
	EndExecutions(ctx context.Context, runID string, status duet.RunStatus) error
	// CancelRun writes the run's cancellation request, status, end and
	// error.
	CancelRun(ctx context.Context, run *duet.Run) error
	Totals(ctx context.Context, r *duet.Run) error
	RunFinished(ctx context.Context, runID string, status duet.RunStatus, flaky int, now time.Time) error
}

// RequestCancel asks viewer's run to stop through tx: a queued run is
// cancelled at once (its executions too, and its end announced to the
// task's webhooks); a finished one is returned as it is.
func RequestCancel(ctx context.Context, tx CancelTx, viewer, runID string, now time.Time) (*duet.Run, error) {
	run, err := tx.VisibleRun(ctx, viewer, runID)
	if err != nil {
		return nil, err
	}
	if run.Status.Final() {
		return run, tx.Totals(ctx, run)
	}
	run.CancelRequested = true
	if run.Status == duet.StatusQueued {
		run.Status, run.FinishedAt = duet.StatusCancelled, &now
		run.ErrorCode, run.ErrorMessage = duet.CodeCancelled, "cancelled by "+viewer+" before it started"
		if err := tx.EndExecutions(ctx, runID, duet.StatusCancelled); err != nil {
			return nil, err
		}
	}
	if err := tx.CancelRun(ctx, run); err != nil {
		return nil, err
	}
	if run.Status == duet.StatusCancelled {
		if err := tx.RunFinished(ctx, runID, run.Status, 0, now); err != nil {
			return nil, err
		}
	}
	return run, tx.Totals(ctx, run)
}

// RetryTx is what RetryExecution asks of one engine's transaction.
type RetryTx interface {
	// HeldExecution reads (and on engines with row locks, locks: the run
	// row first, then the execution's, the order FinishRun and
	// RequestCancel take them in) execution id of l's run with its step
	// results and attempts: LEASE_LOST when l does not hold the run.
	HeldExecution(ctx context.Context, l duet.Lease, id string) (*duet.Execution, error)
	// AddAttempt stores attempt (its JSON data) among the execution's
	// attempts.
	AddAttempt(ctx context.Context, executionID string, attempt int, data string) error
	// Restart drops the execution's step results and begins its attempt:
	// running, without error, variables or end, from its first step.
	Restart(ctx context.Context, executionID string, attempt int) error
}

// RetryExecution keeps the failed attempt e.Attempt of l's execution e
// among its attempts and begins the next one through tx; it returns the
// execution's attempts (for duet.RetriedExecution).
func RetryExecution(ctx context.Context, tx RetryTx, l duet.Lease, e *duet.Execution) ([]*duet.ExecutionAttempt, error) {
	x, err := tx.HeldExecution(ctx, l, e.ID)
	if err != nil {
		return nil, err
	}
	a, err := duet.RetryAttempt(x, e.Attempt)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	if err := tx.AddAttempt(ctx, x.ID, a.Attempt, string(data)); err != nil {
		return nil, err
	}
	if err := tx.Restart(ctx, x.ID, a.Attempt+1); err != nil {
		return nil, err
	}
	return append(x.Attempts, a), nil
}

// ExecutionPageEnd cuts a page read with one execution more than limit to
// limit, returns the cursor of the next page ("" if none), and drops the
// steps and variables of a summary page.
func ExecutionPageEnd(execs []*duet.Execution, f duet.ExecutionFilter, limit int) ([]*duet.Execution, string) {
	execs, next := Page(execs, limit, func(x *duet.Execution) string { return strconv.Itoa(x.Ordinal) })
	if !f.Results {
		for _, e := range execs {
			e.Steps, e.Vars = nil, nil
		}
	}
	return execs, next
}

// RunColumns are the columns of runs r that ScanRun reads.
const RunColumns = `r.id, r.task_id, r.status, r.triggered_by, r.call_source, r.trace_id, r.device, r.error_code, r.error_message,
	r.cancel_requested, r.created_at, r.started_at, r.finished_at, r.attempt, r.lost, r.post_run, r.call_depth,
	r.origin_commit, r.origin_branch, r.origin_pr, r.origin_pipeline, r.environment, r.hooks, r.trace`

// ScanRun reads a run of RunColumns and then, into tail, the columns
// after them.
func ScanRun(r Row, tail ...any) (*duet.Run, error) {
	var run duet.Run
	var o duet.RunOrigin
	var postRun, hooks string
	dest := []any{&run.ID, &run.TaskID, &run.Status, &run.TriggeredBy, &run.CallSource, &run.TraceID, &run.Device,
		&run.ErrorCode, &run.ErrorMessage, &run.CancelRequested, TimeOf(&run.CreatedAt), TimePtrOf(&run.StartedAt), TimePtrOf(&run.FinishedAt),
		&run.Attempt, &run.Lost, &postRun, &run.CallDepth, &o.Commit, &o.Branch, &o.PullRequest, &o.Pipeline, &run.Environment, &hooks, &run.Trace}
	if err := r.Scan(append(dest, tail...)...); err != nil {
		return nil, err
	}
	return &run, DecodeRun(&run, o, postRun, hooks)
}

// ExecColumns are the columns of executions e that ScanExecution reads.
const ExecColumns = `e.id, e.run_id, e.case_id, e.case_key, e.case_title, e.case_version, e.ordinal, e.timeout_ms, e.status, e.steps, e.vars,
	e.error_code, e.error_message, e.started_at, e.finished_at, e.resume_from, e.row, e.retries, e.attempt`

// ScanExecution reads an execution of ExecColumns, without its results.
func ScanExecution(r Row) (*duet.Execution, error) {
	var e duet.Execution
	var steps, vars, row string
	if err := r.Scan(&e.ID, &e.RunID, &e.CaseID, &e.CaseKey, &e.CaseTitle, &e.CaseVersion, &e.Ordinal, &e.TimeoutMs, &e.Status, &steps, &vars,
		&e.ErrorCode, &e.ErrorMessage, TimePtrOf(&e.StartedAt), TimePtrOf(&e.FinishedAt), &e.ResumeFrom, &row, &e.Retries, &e.Attempt); err != nil {
		return nil, err
	}
	return &e, DecodeExecution(&e, steps, vars, row)
}

// Runs is the part of duet.RunStore that is the same on every engine.
type Runs struct{ E Engine }

// SaveRunHooks stores the results of the task's hooks in l's run (fenced).
// Returns LEASE_LOST.
func (s Runs) SaveRunHooks(ctx context.Context, l duet.Lease, results []*duet.StepResult, vars map[string]any) error {
	hooks, err := EncodeRunHooks(results, vars)
	if err != nil {
		return err
	}
	n, err := s.E.Exec(ctx, `UPDATE runs SET hooks = $1 WHERE id = $2 AND lease_owner = $3 AND attempt = $4 AND status = 'running'`, hooks, l.RunID, l.Worker, l.Token)
	if err == nil && n == 0 {
		return duet.LeaseLost(l)
	}
	return err
}

// FindExecutions returns the executions of a run in order, with results.
func (s Runs) FindExecutions(ctx context.Context, runID string) ([]*duet.Execution, error) {
	execs, err := All(ctx, s.E, ScanExecution, `SELECT `+ExecColumns+` FROM executions e WHERE e.run_id = $1 ORDER BY e.ordinal`, runID)
	if err != nil {
		return nil, err
	}
	return execs, LoadResults(ctx, s.E, execs...)
}

// RunRows is the part of FinishTx, CancelTx and RetryTx that is the same
// on every engine, on an Engine whose statements run in the transaction.
type RunRows struct{ E Engine }

// AddAttempt stores attempt (its JSON data) among the execution's
// attempts.
func (t RunRows) AddAttempt(ctx context.Context, executionID string, attempt int, data string) error {
	_, err := t.E.Exec(ctx, `INSERT INTO execution_attempts (execution_id, attempt, data) VALUES ($1, $2, $3)`, executionID, attempt, data)
	return err
}

// Restart drops the execution's step results and begins its attempt:
// running, without error, variables or end, from its first step.
func (t RunRows) Restart(ctx context.Context, executionID string, attempt int) error {
	if _, err := t.E.Exec(ctx, `DELETE FROM step_results WHERE execution_id = $1`, executionID); err != nil {
		return err
	}
	_, err := t.E.Exec(ctx, `UPDATE executions SET status = $1, attempt = $2, error_code = '', error_message = '', vars = '{}', finished_at = NULL, resume_from = 0 WHERE id = $3`,
		duet.StatusRunning, attempt, executionID)
	return err
}

// EndExecutions gives the run's pending and running executions status.
func (t RunRows) EndExecutions(ctx context.Context, runID string, status duet.RunStatus) error {
	_, err := t.E.Exec(ctx, `UPDATE executions SET status = $1 WHERE run_id = $2 AND status IN ('pending', 'running')`, status, runID)
	return err
}

// Totals counts r's executions into r.Totals.
func (t RunRows) Totals(ctx context.Context, r *duet.Run) error { return FillTotals(ctx, t.E, r) }

// HeldRun checks l holds its run (and on engines with row locks, locks the
// run row): LEASE_LOST when it does not.
func (t RunRows) HeldRun(ctx context.Context, l duet.Lease) error {
	var one int
	err := t.E.Read(ctx, []any{&one}, `SELECT 1 FROM runs WHERE id = $1 AND lease_owner = $2 AND attempt = $3 AND status = 'running'`+t.E.ForUpdate,
		l.RunID, l.Worker, l.Token)
	if errors.Is(err, sql.ErrNoRows) {
		return duet.LeaseLost(l)
	}
	return err
}

// CancelRun writes the run's cancellation request, status, end and error.
func (t RunRows) CancelRun(ctx context.Context, run *duet.Run) error {
	_, err := t.E.Exec(ctx, `UPDATE runs SET cancel_requested = $1, status = $2, finished_at = $3, error_code = $4, error_message = $5 WHERE id = $6`,
		true, run.Status, t.E.StoredPtr(run.FinishedAt), run.ErrorCode, run.ErrorMessage, run.ID)
	return err
}

// FindIncomplete runs query, the engine's statement that finds an
// execution of run runID a verdict cannot summarise (its case title,
// status, step results and steps), on e: ok is false if there is none.
func FindIncomplete(ctx context.Context, e Engine, query, runID string) (title string, status duet.RunStatus, res, n int, ok bool, err error) {
	err = e.Read(ctx, []any{&title, &status, &res, &n}, query, runID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", 0, 0, false, nil
	}
	return title, status, res, n, err == nil, err
}

// EncodeStepResult is how SaveStepResult stores a step result and the
// execution's variables after it: JSON both.
func EncodeStepResult(r *duet.StepResult, vars map[string]any) (data, varsJSON string, err error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", "", err
	}
	varsJSON, err = MarshalVars(vars)
	return string(b), varsJSON, err
}
