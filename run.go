package duet

import (
	"context"
	"encoding/json"
	"time"
)

// RunStatus is the state of a run or of one execution within it.
type RunStatus string

// Run and execution statuses. A run goes queued → running → one of the final
// states; an execution may also be pending (not yet started) or skipped.
const (
	StatusPending   RunStatus = "pending"
	StatusQueued    RunStatus = "queued"
	StatusRunning   RunStatus = "running"
	StatusPassed    RunStatus = "passed"
	StatusFailed    RunStatus = "failed"
	StatusError     RunStatus = "error"
	StatusCancelled RunStatus = "cancelled"
	StatusSkipped   RunStatus = "skipped"
	// StatusFlaky is an execution that failed and then passed on a retry
	// (Execution.Attempts keeps the failed attempts): a pass for the run's
	// verdict, unless the caller fails on flaky cases (--fail-on-flaky).
	StatusFlaky RunStatus = "flaky"
)

// Final reports whether s is a final state.
func (s RunStatus) Final() bool {
	switch s {
	case StatusPassed, StatusFailed, StatusError, StatusCancelled, StatusSkipped, StatusFlaky:
		return true
	}
	return false
}

// Run is a batch of case executions of one task, started by one user. It
// executes asynchronously; its executor is TriggeredBy, whose own MCP
// registrations and credentials its mcpCall steps use.
type Run struct {
	ID              string     `json:"id"`
	TaskID          string     `json:"taskId"`
	Status          RunStatus  `json:"status"`
	TriggeredBy     string     `json:"triggeredBy"`
	CallSource      CallSource `json:"callSource"`
	TraceID         string     `json:"traceId,omitempty"`
	Device          string     `json:"device,omitempty"`
	Trace           string     `json:"trace,omitempty"` // when its cases keep a trace ("": the task's, else DUET_TRACE)
	ErrorCode       Code       `json:"errorCode,omitempty"`
	ErrorMessage    string     `json:"errorMessage,omitempty"`
	CancelRequested bool       `json:"cancelRequested,omitempty"`
	CreatedAt       time.Time  `json:"createdAt"`
	StartedAt       *time.Time `json:"startedAt,omitempty"`
	FinishedAt      *time.Time `json:"finishedAt,omitempty"`
	Totals          RunTotals  `json:"totals"`
	Attempt         int        `json:"attempt"`        // times a worker claimed the run
	Lost            int        `json:"lost,omitempty"` // times its worker was lost while running it (lease expired)
	// PostRun are the outcomes of the task's post-run actions made when
	// the run ended: notes, never part of the verdict.
	PostRun []*PostRunResult `json:"postRun,omitempty"`
	// CallDepth is how many Duet calls deep the request that started the
	// run was (Caller.CallDepth): its MCP calls and http steps carry
	// CallDepth+1.
	CallDepth int `json:"callDepth,omitempty"`
	// Origin is where the run was started from (a CI pipeline), when the
	// caller said.
	Origin *RunOrigin `json:"origin,omitempty"`
	// Environment is the task's environment the run runs in (its name;
	// "" for none): the start's choice, else the task's default.
	Environment string `json:"environment,omitempty"`
	// Hooks are the results of the task's beforeAll and afterAll steps in
	// this run (each with its Hook), in the order they ran.
	Hooks []*StepResult `json:"hooks,omitempty"`
	// HookVars are the variables the beforeAll steps saved, as stored
	// (redacted): every case of the run starts with them.
	HookVars map[string]any `json:"-"`
}

// RunOrigin is where a run came from: the commit, branch, pull request and
// pipeline of the CI job that started it.
type RunOrigin struct {
	Commit      string `json:"commit,omitempty" jsonschema:"the commit the pipeline tests"`
	Branch      string `json:"branch,omitempty" jsonschema:"its branch"`
	PullRequest string `json:"pullRequest,omitempty" jsonschema:"the pull or merge request's URL"`
	Pipeline    string `json:"pipeline,omitempty" jsonschema:"the pipeline run's URL"`
}

// Empty reports whether o says nothing.
func (o *RunOrigin) Empty() bool {
	return o == nil || (o.Commit == "" && o.Branch == "" && o.PullRequest == "" && o.Pipeline == "")
}

// RunTotals counts the executions of a run by status.
type RunTotals struct {
	Cases     int `json:"cases"`
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Passed    int `json:"passed"`
	Failed    int `json:"failed"`
	Error     int `json:"error"`
	Cancelled int `json:"cancelled"`
	Flaky     int `json:"flaky"` // passed on a retry, after failing
}

// Execution is the execution of one case (at one version) within a run, with
// the steps it ran and their results.
type Execution struct {
	ID           string         `json:"id"`
	RunID        string         `json:"runId"`
	CaseID       string         `json:"caseId"`
	CaseKey      string         `json:"caseKey"`
	CaseTitle    string         `json:"caseTitle"`
	CaseVersion  int            `json:"caseVersion"`
	Ordinal      int            `json:"ordinal"`
	TimeoutMs    int64          `json:"timeoutMs,omitempty"`
	Status       RunStatus      `json:"status"`
	Steps        []Step         `json:"-"` // the compiled steps this execution runs (a snapshot)
	Results      []*StepResult  `json:"steps"`
	Vars         map[string]any `json:"variables,omitempty"` // saved variables, redacted
	Row          map[string]any `json:"row,omitempty"`       // the case's data row (Case.Row)
	ErrorCode    Code           `json:"errorCode,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty"`
	StartedAt    *time.Time     `json:"startedAt,omitempty"`
	FinishedAt   *time.Time     `json:"finishedAt,omitempty"`
	// ResumeFrom is the step an interrupted execution goes on at when it
	// is resumed: 0, it restarts from its first step; n > 0, its steps
	// before n are stored whole (RunStore.SuspendExecution).
	ResumeFrom int `json:"-"`
	// Retries is how many times the case runs again from its start after
	// a failed attempt (the run's retries, else the case's, else its
	// task's); Attempt is the attempt running or last run (1 the first, 2
	// the first retry, ...), and Attempts are the earlier, failed
	// attempts, each with its step results and evidence, in order. A case
	// that passes on a retry is flaky.
	Retries  int                 `json:"retries,omitempty"`
	Attempt  int                 `json:"attempt,omitempty"`
	Attempts []*ExecutionAttempt `json:"attempts,omitempty"`
}

// ExecutionAttempt is one finished, failed attempt at an execution that
// was retried (Execution.Attempts): what it ran and how it ended, kept as
// it was stored when the retry began.
type ExecutionAttempt struct {
	Attempt      int           `json:"attempt"`
	Status       RunStatus     `json:"status"`
	ErrorCode    Code          `json:"errorCode,omitempty"`
	ErrorMessage string        `json:"errorMessage,omitempty"`
	StartedAt    *time.Time    `json:"startedAt,omitempty"`
	FinishedAt   *time.Time    `json:"finishedAt,omitempty"`
	Results      []*StepResult `json:"steps"`
}

// StepResult is what happened to one step of an execution.
type StepResult struct {
	Index        int             `json:"index"`
	Kind         StepKind        `json:"kind"`
	Name         string          `json:"name"`
	Status       RunStatus       `json:"status"`
	StartedAt    *time.Time      `json:"startedAt,omitempty"`
	FinishedAt   *time.Time      `json:"finishedAt,omitempty"`
	DurationMs   int64           `json:"durationMs"`
	SavedAs      string          `json:"savedAs,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"` // the saved value, redacted and truncated
	ErrorCode    Code            `json:"errorCode,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Artifacts    []string        `json:"artifacts,omitempty"` // artifact ids (screenshots)
	Optional     bool            `json:"optional,omitempty"`  // failed under FailOptional; the case went on
	Soft         bool            `json:"soft,omitempty"`      // a soft assertion that failed; the case went on, and fails at its end
	AI           *AIUsage        `json:"ai,omitempty"`        // what an AI step's model calls cost
	// Hook names the hook the step belongs to (Step.Hook).
	Hook string `json:"hook,omitempty"`
	// Iteration is the loop iteration (from 1) of the enclosing repeat or
	// forEach step the step ran in; 0 outside a loop.
	Iteration int `json:"iteration,omitempty"`
	// Branch says which steps an if step ran: "then", "else", or "none"
	// (the condition was false and there is no else).
	Branch string `json:"branch,omitempty"`
	// Iterations is how many iterations a repeat or forEach step began.
	Iterations int `json:"iterations,omitempty"`
	// Children are the results of the steps a flow step (if, repeat,
	// forEach, use) ran, in the order they ran: each one's Index is its
	// place in its list, Iteration its loop iteration. At most
	// MaxChildResults are kept; Omitted counts the passed ones left out.
	Children StepResults `json:"children,omitempty"`
	Omitted  int         `json:"omitted,omitempty"`
}

// StepResults are the results of the steps a flow step ran
// (StepResult.Children). A type of its own so that a JSON Schema reflected
// from a result can stop at it (a result holds results).
type StepResults []*StepResult

// MaxChildResults bounds the results a flow step keeps of the steps it ran
// (a loop of many iterations): past it, only failed results are kept, and
// the others counted in StepResult.Omitted.
const MaxChildResults = 1000

// Walk calls fn for r and, depth first, each result among its children.
func (r *StepResult) Walk(fn func(*StepResult)) {
	if r == nil {
		return
	}
	fn(r)
	for _, c := range r.Children {
		c.Walk(fn)
	}
}

// AIUsage is what the model calls of an AI step (aiAssert, aiQuery,
// aiWaitFor) cost: failed calls count as calls, tokens as the endpoint
// reported them.
type AIUsage struct {
	Calls            int `json:"calls"`
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
	// Transcript is the artifact that keeps what the model was shown and
	// what it answered, scrubbed of the run's secrets ("" when the engine
	// keeps no artifacts).
	Transcript string `json:"transcript,omitempty"`
	// Cached says an acting AI step (ai, aiTap, aiFill) replayed a plan
	// from the shared cache, without a model call.
	Cached bool `json:"cached,omitempty"`
	// Healed says the step's cached plan no longer fitted the page (a
	// locator that no longer resolves, a changed page region) and the
	// model found the way again; HealedDraft is the draft version of the
	// case it proposes for the case owner's approval.
	Healed      bool   `json:"healed,omitempty"`
	HealedDraft string `json:"healedDraft,omitempty"`
	// Actions are the actions the step performed, each by the locator
	// that found its element.
	Actions []AIAction `json:"actions,omitempty"`
}

// Lease is a worker's hold on a run, as its claim gave it: the run, the
// worker and the claim's fencing token — the run's Attempt at the claim,
// which every claim increments in the same statement. Every write of the
// run's results and state carries it, and the store refuses the write with
// LEASE_LOST once the worker no longer holds the run under that claim
// (another worker claimed it after the lease ran out, or it was released or
// finished): a worker that lost its lease cannot write.
type Lease struct {
	RunID  string
	Worker string
	Token  int
}

// LeaseOf returns the lease worker holds on r, a run its claim returned.
func LeaseOf(r *Run, worker string) Lease {
	return Lease{RunID: r.ID, Worker: worker, Token: r.Attempt}
}

// LeaseLost is the refusal of a write fenced by l: the worker no longer
// holds the run under that claim.
func LeaseLost(l Lease) *Error {
	return Errorf(CodeLeaseLost, "worker %s no longer holds run %s under its claim %d: another worker took it over after the lease ran out, or it was handed back or ended; the write was refused", l.Worker, l.RunID, l.Token)
}

// Incomplete is the refusal of a verdict over an execution that is not
// finished or lacks step results (RunStore.FinishRun).
func Incomplete(runID, caseTitle string, status RunStatus, results, steps int) *Error {
	return Errorf(CodeConflict, "run %s has no verdict yet: case %q is %s with %d of its %d step results recorded; a verdict is written only with every result it summarises", runID, caseTitle, status, results, steps)
}

// RunFilter selects runs.
type RunFilter struct {
	Viewer string // required: runs of tasks the viewer may see
	TaskID string
	Status RunStatus
	Branch string // only runs whose origin has this branch
	Commit string // only runs whose origin has this commit
	// UpTo, when set, keeps the runs whose id sorts at or before it (ids
	// sort by creation): with TaskID, how many there are is the run's
	// number in its task.
	UpTo   string
	Cursor string
	Limit  int // 0 means 20; at most 100
}

// ExecutionFilter selects one page of the executions of a run, in order.
type ExecutionFilter struct {
	RunID   string
	Cursor  string // opaque; from a previous page
	Limit   int    // 0 means 100; at most 1000
	Results bool   // load step results, variables and compiled steps too
}

// IdempotencyRecord remembers the first result of an idempotent call.
type IdempotencyRecord struct {
	Caller    string          `json:"caller"`
	Key       string          `json:"key"`
	Tool      string          `json:"tool"`
	ArgsHash  string          `json:"argsHash"`
	Result    json.RawMessage `json:"result"`
	CreatedAt time.Time       `json:"createdAt"`
	ExpiresAt time.Time       `json:"expiresAt"`
}

// StartRunParams describes a new run for RunStore.CreateRun.
type StartRunParams struct {
	Run        *Run
	Executions []*Execution
	// Idempotency, when set, makes the creation idempotent per (Caller, Key):
	// if an unexpired record exists with the same ArgsHash, no run is created
	// and the stored record is returned; with another ArgsHash the call fails
	// with IDEMPOTENCY_CONFLICT. Result is filled by the store from
	// ResultFunc(run) when the run is created.
	Idempotency *IdempotencyRecord
	ResultFunc  func(*Run) (json.RawMessage, error)
	// MaxQueued, when positive, refuses the run with RATE_LIMITED when its
	// executor (Run.TriggeredBy) already has that many runs queued. A
	// replayed idempotent call is never refused.
	MaxQueued int
	// MaxPerMinute, when positive, refuses the run with RATE_LIMITED when
	// its executor started that many runs in the last minute (counted in
	// the store, so across every instance on one database). A replayed
	// idempotent call is never refused.
	MaxPerMinute int
	// Fire, when set, makes the run a schedule's: the store claims the
	// slot (a compare-and-set of the schedule's NextFireAt) in the
	// transaction that creates the run, and refuses with CONFLICT, creating
	// nothing, when another scheduler claimed it first.
	Fire *ScheduleFire
}

// RunStore keeps runs and executions and is the durable queue the workers
// take runs from.
type RunStore interface {
	// CreateRun stores a queued run and its pending executions in one
	// transaction, honouring p.Idempotency, p.MaxQueued and p.MaxPerMinute,
	// and keeps Run.CallDepth. It returns the
	// idempotency record (fresh or replayed) and whether it was replayed.
	// Returns IDEMPOTENCY_CONFLICT, INVALID_ARGUMENT, RATE_LIMITED.
	CreateRun(ctx context.Context, p StartRunParams) (rec *IdempotencyRecord, replayed bool, err error)

	// FindRunByID returns the run if viewer may see its task ("" = any).
	// Returns NOT_FOUND.
	FindRunByID(ctx context.Context, viewer, id string) (*Run, error)

	// FindRuns returns a page of runs, newest first.
	FindRuns(ctx context.Context, filter RunFilter) (runs []*Run, next string, err error)

	// CountRuns returns how many runs filter selects, on every page (its
	// Cursor and Limit are ignored): the total of a listing.
	CountRuns(ctx context.Context, filter RunFilter) (int, error)

	// FindExecutions returns the executions of a run in order, with results.
	FindExecutions(ctx context.Context, runID string) ([]*Execution, error)

	// FindExecutionPage returns one page of the executions of a run in
	// order and the cursor of the next page ("" on the last). Without
	// filter.Results only the summary is loaded (no steps, variables or
	// results): a run of any size pages cheaply. Returns INVALID_ARGUMENT
	// for a bad cursor.
	FindExecutionPage(ctx context.Context, filter ExecutionFilter) (execs []*Execution, next string, err error)

	// FindExecutionByID returns an execution with its results if viewer may
	// see its task ("" = any). Returns NOT_FOUND.
	FindExecutionByID(ctx context.Context, viewer, id string) (*Execution, error)

	// FindRunPage returns the run filter.RunID as FindRunByID(viewer) does
	// and one page of its executions as FindExecutionPage(filter) does,
	// read together (one statement on PostgreSQL, filter.Results or not).
	// Returns NOT_FOUND, INVALID_ARGUMENT.
	FindRunPage(ctx context.Context, viewer string, filter ExecutionFilter) (*Run, []*Execution, string, error)

	// FindExecutionAndRun returns the execution as FindExecutionByID does
	// and its run as FindRunByID does, read together (one round trip on
	// PostgreSQL). Returns NOT_FOUND.
	FindExecutionAndRun(ctx context.Context, viewer, id string) (*Execution, *Run, error)

	// ClaimRun takes a queued run, or a running run whose lease has expired
	// (a lost worker: Lost is then incremented), marks it running under a
	// lease held by worker until now+lease, and returns it; nil when there
	// is none. The queue is fair across executors: it serves the executor
	// with the fewest runs running, then the one served least recently, and
	// each executor's runs in the order they were created. The claim is one
	// atomic statement over the run table.
	ClaimRun(ctx context.Context, worker string, lease time.Duration) (*Run, error)

	// ClaimRunByID claims one run, like ClaimRun, if it is queued or its
	// lease expired; nil when it is not claimable (taken or finished).
	ClaimRunByID(ctx context.Context, runID, worker string, lease time.Duration) (*Run, error)

	// RenewLease extends the worker's lease on a run by d. It returns the
	// current run, so that the worker sees a cancellation request. Returns
	// LEASE_LOST when the worker no longer holds the run under l.
	RenewLease(ctx context.Context, l Lease, d time.Duration) (*Run, error)

	// The writes of a run's results and state below are fenced by the
	// worker's lease: each is refused with LEASE_LOST, changing nothing,
	// unless the worker still holds the run under l (the same claim, the
	// run still running), checked atomically with the write.

	// StartExecution marks an execution of l's run running and forgets the
	// step results of any earlier, interrupted attempt at it — all of them,
	// or, resuming at e.ResumeFrom = n > 0, those of steps n and later
	// (the variables stored with step n-1 are kept). Either way the
	// execution's resume point goes back to 0.
	StartExecution(ctx context.Context, l Lease, e *Execution) error

	// SuspendExecution records that an execution of l's run, interrupted
	// before its step next (a worker stopping), may resume there: its
	// steps before next are stored whole — their results and the
	// variables the case held. Its next holder resumes it at next instead
	// of running those steps again.
	SuspendExecution(ctx context.Context, l Lease, executionID string, next int) error

	// SaveRunHooks stores the results of the task's beforeAll and afterAll
	// steps in l's run so far, and the variables the beforeAll steps saved
	// (Run.Hooks, Run.HookVars), replacing what was stored.
	SaveRunHooks(ctx context.Context, l Lease, results []*StepResult, vars map[string]any) error

	// SaveStepResult stores (inserts or replaces) one step result of an
	// execution of l's run and the execution's variables so far.
	SaveStepResult(ctx context.Context, l Lease, executionID string, r *StepResult, vars map[string]any) error

	// FinishExecution stores the final state of an execution of l's run.
	FinishExecution(ctx context.Context, l Lease, e *Execution) error

	// RetryExecution begins attempt e.Attempt+1 of an execution of l's
	// run whose attempt e.Attempt ended failed (FinishExecution) with
	// every step result stored: in one transaction it keeps that attempt
	// (its status, error, times and the step results as stored) among the
	// execution's Attempts, clears its step results and variables, and
	// marks it running at the next attempt. e is updated to match. It is
	// refused with CONFLICT when the attempt is not finished, has passed,
	// lacks a step result, or is not e.Attempt (a retry made already).
	RetryExecution(ctx context.Context, l Lease, e *Execution) error

	// ReleaseRun puts l's run back in the queue (a graceful shutdown, a
	// worker that cannot write): it becomes queued again and another
	// worker resumes it.
	ReleaseRun(ctx context.Context, l Lease) error

	// FinishRun stores the final state of l's run (with its post-run
	// results) and releases its lease. A verdict — passed or failed — is
	// written only with every result it summarises: it is refused with
	// CONFLICT while an execution is unfinished or lacks a step result. An
	// error or a cancellation ends the unfinished executions with the run.
	FinishRun(ctx context.Context, l Lease, r *Run) error

	// RequestCancel asks a run to stop. A queued run is cancelled at once;
	// a running one is cancelled by its worker. Returns NOT_FOUND.
	RequestCancel(ctx context.Context, viewer, runID string) (*Run, error)

	// DeleteExpiredIdempotency removes idempotency records that expired
	// before now and returns how many.
	DeleteExpiredIdempotency(ctx context.Context, now time.Time) (int, error)
}

// RetryAttempt is the attempt a store keeps when an execution, x as
// stored (with its results and attempts), is retried after its attempt
// number attempt (RunStore.RetryExecution). It refuses with CONFLICT a
// retry of an attempt that is not x's current one, is not finished and
// failed, or lacks a step result: an attempt is kept only whole.
func RetryAttempt(x *Execution, attempt int) (*ExecutionAttempt, error) {
	cur := max(x.Attempt, 1)
	if attempt != cur {
		return nil, Errorf(CodeConflict, "execution %s is at attempt %d, not %d: that retry was made already", x.ID, cur, attempt)
	}
	switch x.Status {
	case StatusFailed, StatusError:
	default:
		return nil, Errorf(CodeConflict, "execution %s cannot be retried: its attempt %d is %s, not failed", x.ID, cur, x.Status)
	}
	if len(x.Results) < len(x.Steps) {
		return nil, Errorf(CodeConflict, "execution %s cannot be retried: its attempt %d has %d of its %d step results recorded; an attempt is kept only whole", x.ID, cur, len(x.Results), len(x.Steps))
	}
	return &ExecutionAttempt{Attempt: cur, Status: x.Status, ErrorCode: x.ErrorCode, ErrorMessage: x.ErrorMessage,
		StartedAt: x.StartedAt, FinishedAt: x.FinishedAt, Results: x.Results}, nil
}

// RetriedExecution brings e, just retried (RunStore.RetryExecution), in
// line with what the store keeps: its attempts, the next attempt running
// from the start.
func RetriedExecution(e *Execution, attempts []*ExecutionAttempt) {
	e.Attempts = attempts
	e.Attempt = len(attempts) + 1
	if n := len(attempts); n > 0 {
		e.Attempt = attempts[n-1].Attempt + 1
	}
	e.Status, e.ErrorCode, e.ErrorMessage, e.FinishedAt, e.ResumeFrom = StatusRunning, "", "", nil, 0
	e.Results, e.Vars = []*StepResult{}, map[string]any{}
}
