package catalog

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// Tasks (the MCP Tasks extension, SEP-2663). A client that declares the
// extension may get, for a call of a tool that supports tasks, a task in
// place of the result: the call answers at once with the task's id, and the
// client follows it with tasks/get (status, then the result inlined),
// answers its questions with tasks/update, and stops it with tasks/cancel.
// The server decides; a client without the extension gets the result as
// before — or, for a tool that runs only as a task, CAPABILITY_REQUIRED.
//
// A test run is the textbook task: start_test_run called as a task answers
// with the run as a task (its id is the run id), durable in the store like
// the run itself — any instance answers tasks/get, tasks/cancel is the run's
// cancel, and the result is the run's result once it ends. Other tools go
// async with Env.Async: their work runs in this process, and its task lives
// in memory for TaskTTL.
//
// A task is bound to the user who created it: anyone else's tasks/get is
// answered like one of an unknown id (NOT_FOUND, JSON-RPC -32602).

// TasksExtension is the identifier of the Tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Task support of a tool.
const (
	TaskNever    = ""         // the tool always answers in the call
	TaskOptional = "optional" // a client with the extension gets a task
	TaskRequired = "required" // only a client with the extension may call it
)

// Task statuses.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// taskPollMs is the poll interval a task suggests.
const taskPollMs = 1000

// MCPTask is a task of the Tasks extension as tasks/get shows it (not a test
// task: see TaskView).
type MCPTask struct {
	ID            string
	Status        string
	Message       string // statusMessage; may be ""
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	TTL           time.Duration
	PollInterval  time.Duration
	// Result is the tool's result once the status is completed.
	Result *Result
	// Error is the failure of a failed task (a protocol-level failure:
	// INTERNAL); a tool's own error is a completed task with an error
	// Result.
	Error *ErrorBody
	// InputRequests are the questions still unanswered while the status
	// is input_required.
	InputRequests map[string]InputRequest
}

// WithTasks declares how t supports tasks (TaskOptional, TaskRequired).
func (t *Tool) WithTasks(support string) *Tool {
	t.Tasks = support
	return t
}

// asyncWork is Env.Async's error: the rest of the call's work.
type asyncWork struct {
	work func(ctx context.Context, env *Env) (Texter, error)
}

func (*asyncWork) Error() string { return "the call continues as a task" }

// Async returns the error by which a tool hands the rest of its work to a
// task when the client has the Tasks extension; otherwise the work runs at
// once, in the call, and its result is the call's. work may ask the client
// (Env.Ask: the task waits in input_required for tasks/update) and is
// called again, from the start, with the answers.
func (e *Env) Async(work func(ctx context.Context, env *Env) (Texter, error)) error {
	return &asyncWork{work: work}
}

// TasksDeclared reports whether the client declared the Tasks extension.
func (e *Env) TasksDeclared() bool { return slices.Contains(e.Extensions, TasksExtension) }

// TrackRun makes run runID the task of this call when the client declared
// the Tasks extension (start_test_run): the call answers with the task.
func (e *Env) TrackRun(runID string) {
	if e.TasksDeclared() {
		e.run = runID
	}
}

// memTask is a task whose work runs in this process.
type memTask struct {
	id, owner, tool string
	args            json.RawMessage
	caller          duet.Caller
	can             func(method string) bool
	work            func(ctx context.Context, env *Env) (Texter, error)

	mu        sync.Mutex
	status    string
	message   string
	created   time.Time
	updated   time.Time
	result    *Result
	err       *ErrorBody
	questions map[string]InputRequest // unanswered
	answers   map[string]json.RawMessage
	state     []byte
	cancel    context.CancelFunc
}

// tasks is the catalog's in-memory task table.
type tasks struct {
	mu sync.Mutex
	m  map[string]*memTask
}

func newTaskID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "task_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

func (c *Catalog) taskTTL() time.Duration { return c.opts.Limits.TaskTTL }

// startTask creates the task of work, starts it, and returns its view.
func (c *Catalog) startTask(req Request, t *Tool, work func(ctx context.Context, env *Env) (Texter, error)) *MCPTask {
	now := c.opts.Now()
	mt := &memTask{id: newTaskID(), owner: req.Caller.UserID, tool: t.Name, args: req.Args, caller: req.Caller, work: work,
		status: TaskWorking, created: now, updated: now}
	if req.Input != nil && t.Asks() {
		mt.can = req.Input.Can
	}
	if mt.can == nil && t.Asks() {
		// A task's questions wait in tasks/get for the client to answer
		// with tasks/update: no session or in-band round is needed.
		mt.can = func(string) bool { return true }
	}
	c.tasks.mu.Lock()
	for id, old := range c.tasks.m { // drop expired tasks
		old.mu.Lock()
		expired := now.Sub(old.updated) > c.taskTTL() && old.status != TaskWorking
		old.mu.Unlock()
		if expired {
			delete(c.tasks.m, id)
		}
	}
	c.tasks.m[mt.id] = mt
	c.tasks.mu.Unlock()
	c.runTask(mt, nil)
	return c.memView(mt)
}

// runTask runs (or runs again, with answers) the work of mt in the
// background, through the governance pipeline.
func (c *Catalog) runTask(mt *memTask, answers map[string]json.RawMessage) {
	ctx, cancel := context.WithCancel(context.Background())
	mt.mu.Lock()
	mt.cancel = cancel
	state := mt.state
	mt.mu.Unlock()
	go func() {
		defer cancel()
		var out Texter
		op := Op{Caller: mt.caller, Method: "tasks/run", Name: mt.tool, ArgBytes: len(mt.args), Timeout: c.opts.Limits.StreamTimeout}
		var ask *inputRequired
		err := c.Govern(ctx, op, func(ctx context.Context) (int, error) {
			var input *Input
			if mt.can != nil { // nil for a tool that never asks (WithInput)
				input = &Input{Can: mt.can, Responses: answers}
			}
			env := &Env{Caller: mt.caller, Store: c.store, Catalog: c, Progress: func(float64, float64, string) {},
				Extensions: []string{TasksExtension}, input: input, state: state}
			var err error
			out, err = mt.work(ctx, env)
			if errors.As(err, &ask) {
				return 0, nil
			}
			return 0, err
		})
		now := c.opts.Now()
		mt.mu.Lock()
		defer mt.mu.Unlock()
		if mt.status == TaskCancelled {
			return
		}
		mt.updated = now
		switch {
		case ask != nil && err == nil:
			mt.status, mt.questions, mt.answers, mt.state = TaskInputRequired, ask.requests, map[string]json.RawMessage{}, ask.state
			mt.message = "waiting for the client's answers"
		case err == nil:
			b, merr := json.Marshal(out)
			if merr != nil {
				mt.status, mt.err = TaskFailed, &ErrorBody{Code: duet.CodeInternal, Message: "internal error"}
				return
			}
			mt.status, mt.result = TaskCompleted, &Result{Text: out.Text(), Structured: b, Code: duet.OutcomeOK}
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
			mt.status = TaskCancelled
		case duet.ErrorCode(err) == duet.CodeInternal:
			mt.status, mt.err = TaskFailed, &ErrorBody{Code: duet.CodeInternal, Message: "internal error"}
		default:
			mt.status, mt.result = TaskCompleted, errorResult(err)
		}
	}()
}

func (c *Catalog) memView(mt *memTask) *MCPTask {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	v := &MCPTask{ID: mt.id, Status: mt.status, Message: mt.message, CreatedAt: mt.created, LastUpdatedAt: mt.updated,
		TTL: c.taskTTL(), PollInterval: taskPollMs * time.Millisecond, Result: mt.result, Error: mt.err}
	if mt.status == TaskInputRequired {
		v.InputRequests = map[string]InputRequest{}
		for k, q := range mt.questions {
			if _, done := mt.answers[k]; !done {
				v.InputRequests[k] = q
			}
		}
	}
	return v
}

// findMem returns caller's in-memory task id. Returns NOT_FOUND.
func (c *Catalog) findMem(caller duet.Caller, id string) (*memTask, error) {
	c.tasks.mu.Lock()
	mt, ok := c.tasks.m[id]
	c.tasks.mu.Unlock()
	if !ok || mt.owner != caller.UserID {
		return nil, duet.Errorf(duet.CodeNotFound, "no task %q", id)
	}
	return mt, nil
}

func isRunTask(id string) bool { return strings.HasPrefix(id, "run_") }

// taskOp runs a tasks/* method through the governance pipeline.
func (c *Catalog) taskOp(ctx context.Context, caller duet.Caller, method, id string, fn func(ctx context.Context) error) error {
	return c.Govern(ctx, Op{Caller: caller, Method: method, Name: id, ArgBytes: len(id)}, func(ctx context.Context) (int, error) {
		return 0, fn(ctx)
	})
}

// GetTask is tasks/get: caller's task id. Returns NOT_FOUND for a task that
// does not exist, expired, or is someone else's.
func (c *Catalog) GetTask(ctx context.Context, caller duet.Caller, id string) (*MCPTask, error) {
	var v *MCPTask
	err := c.taskOp(ctx, caller, "tasks/get", id, func(ctx context.Context) error {
		if isRunTask(id) {
			var err error
			v, err = c.runTaskView(ctx, caller, id)
			return err
		}
		mt, err := c.findMem(caller, id)
		if err != nil {
			return err
		}
		v = c.memView(mt)
		return nil
	})
	return v, err
}

// UpdateTask is tasks/update: answers to some or all of the questions of
// caller's task id, which resumes when every question is answered. Returns
// NOT_FOUND, INVALID_ARGUMENT (the task is not waiting for input).
func (c *Catalog) UpdateTask(ctx context.Context, caller duet.Caller, id string, answers map[string]json.RawMessage) error {
	return c.taskOp(ctx, caller, "tasks/update", id, func(ctx context.Context) error {
		if isRunTask(id) {
			if _, err := c.runTaskView(ctx, caller, id); err != nil {
				return err
			}
			return duet.Errorf(duet.CodeInvalidArgument, "task %s is not waiting for input", id)
		}
		mt, err := c.findMem(caller, id)
		if err != nil {
			return err
		}
		mt.mu.Lock()
		if mt.status != TaskInputRequired {
			mt.mu.Unlock()
			return duet.Errorf(duet.CodeInvalidArgument, "task %s is not waiting for input (it is %s)", id, mt.status)
		}
		for k, v := range answers {
			if _, asked := mt.questions[k]; asked {
				mt.answers[k] = v
			}
		}
		complete := len(mt.answers) == len(mt.questions)
		all := maps.Clone(mt.answers)
		mt.updated = c.opts.Now()
		if complete {
			mt.status, mt.message, mt.questions = TaskWorking, "", nil
		}
		mt.mu.Unlock()
		if complete {
			c.runTask(mt, all)
		}
		return nil
	})
}

// CancelTask is tasks/cancel: stops caller's task id (a run: the run's
// cancel). Cancelling a finished task changes nothing. Returns NOT_FOUND.
func (c *Catalog) CancelTask(ctx context.Context, caller duet.Caller, id string) error {
	return c.taskOp(ctx, caller, "tasks/cancel", id, func(ctx context.Context) error {
		if isRunTask(id) {
			v, err := c.runTaskView(ctx, caller, id)
			if err != nil || v.Status != TaskWorking {
				return err
			}
			_, err = c.store.RequestCancel(ctx, caller.UserID, id)
			return err
		}
		mt, err := c.findMem(caller, id)
		if err != nil {
			return err
		}
		mt.mu.Lock()
		defer mt.mu.Unlock()
		if mt.status == TaskWorking || mt.status == TaskInputRequired {
			mt.status, mt.message, mt.updated = TaskCancelled, "cancelled by the client", c.opts.Now()
			if mt.cancel != nil {
				mt.cancel()
			}
		}
		return nil
	})
}

// runTaskView is the task of a run caller started. Returns NOT_FOUND.
func (c *Catalog) runTaskView(ctx context.Context, caller duet.Caller, runID string) (*MCPTask, error) {
	r, err := c.store.FindRunByID(ctx, caller.UserID, runID)
	if err != nil {
		return nil, err
	}
	if r.TriggeredBy != caller.UserID {
		return nil, duet.Errorf(duet.CodeNotFound, "no task %q", runID)
	}
	v := &MCPTask{ID: r.ID, CreatedAt: r.CreatedAt, LastUpdatedAt: r.CreatedAt, TTL: c.opts.Limits.IdempotencyTTL,
		PollInterval: taskPollMs * time.Millisecond}
	for _, t := range []*time.Time{r.StartedAt, r.FinishedAt} {
		if t != nil {
			v.LastUpdatedAt = *t
		}
	}
	switch {
	case r.Status == duet.StatusCancelled:
		v.Status, v.Message = TaskCancelled, "the run was cancelled"
	case !r.Status.Final():
		v.Status, v.Message = TaskWorking, fmt.Sprintf("run %s is %s", r.ID, r.Status)
	default:
		v.Status = TaskCompleted
		execs, next, err := c.store.FindExecutionPage(ctx, duet.ExecutionFilter{RunID: r.ID, Limit: 200})
		if err != nil {
			return nil, err
		}
		res := GetRunOut{Run: runView(r), Executions: []ExecutionSummary{}, NextCursor: next, Disclosure: duet.DiscloseRun(caller.UserID, r, execs...)}
		if len(execs) > 0 {
			res.first, res.last = execs[0].Ordinal, execs[len(execs)-1].Ordinal
		}
		for _, x := range execs {
			res.Executions = append(res.Executions, executionSummary(x))
		}
		out := StartRunOut{RunID: r.ID, TaskID: r.TaskID, Status: r.Status, CaseCount: r.Totals.Cases, Result: &res}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, err
		}
		v.Result = &Result{Text: out.Text(), Structured: b, Code: duet.OutcomeOK}
	}
	return v, nil
}
