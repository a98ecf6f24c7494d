// Package engine runs the compiled steps of test cases: HTTP requests,
// assertions, variables, mcpCall steps through the one Invoker, and browser
// steps through a Browser driver. It persists every step's result as it goes,
// and its Worker takes runs from the store's durable queue.
package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/step"
	"github.com/duet-test/duet/internal/trace"
)

// Browser starts isolated browser sessions. internal/browser provides one
// over Chromium (local, or attached over the DevTools protocol) and
// internal/browser/android one over Chrome on phones; internal/app routes
// device names to them.
type Browser interface {
	// NewSession opens an isolated browser context emulating device ("" =
	// the desktop default). allow is what the network guard lets its
	// navigations find on loopback or private addresses: the task's base
	// URL. Returns BROWSER_UNAVAILABLE when no browser can be started.
	NewSession(ctx context.Context, device string, allow netguard.Allowance) (BrowserSession, error)
}

// WaitCondition is what a waitFor step waits for.
type WaitCondition = step.WaitCondition

// BrowserSession is one isolated browser context with one page: the page
// the browser steps of one case drive (step.Page), which the engine closes
// when the case ends. Element operations wait up to the context's deadline
// for their element. Errors carry ELEMENT_NOT_FOUND, STEP_TIMEOUT,
// CANCELLED or BROWSER_ERROR. A driver may implement the extension
// interfaces some step kinds declare (step.Elements, step.Framer,
// step.Tabs, step.Dialogs, step.Historian, step.Emulator,
// step.Evaluator); a step whose kind needs one the driver lacks fails with
// BROWSER_ERROR.
type BrowserSession interface {
	step.Page
	Close()
}

// Artifacts stores files produced by runs (screenshots).
type Artifacts interface {
	// Save stores data and returns the artifact's id.
	Save(ctx context.Context, runID, executionID string, stepIndex int, name string, data []byte) (string, error)
}

// Event is a progress notification of a run.
type Event struct {
	RunID       string
	ExecutionID string
	CaseTitle   string
	Step        *duet.StepResult // nil for execution-level events
	Status      duet.RunStatus   // of the step, or of the execution
	Done, Total int              // executions finished / in the run
}

// Options configure an Engine. Zero values mean the documented defaults.
type Options struct {
	// HTTPClient makes the client of one case's http steps (a case, a
	// run's hook, a tryout), the first time one of them sends a request;
	// allow is the task's base URL, which the network guard lets be
	// loopback or private (the app: netguard.Policy.Allowing(allow).Client()).
	// Browser.NewSession gets the same allowance. The engine closes the
	// client's idle connections when the case ends. nil means clients
	// without a network guard, each with a transport of its own.
	HTTPClient func(allow netguard.Allowance) *http.Client
	// MaxCallDepth bounds the Duet-Call-Depth of http steps: a step of a
	// run whose calls would be deeper fails with CALL_DEPTH_EXCEEDED
	// without a request (internal/calldepth); 0 means
	// calldepth.DefaultMax. (The Invoker bounds mcpCall steps.)
	MaxCallDepth int
	// Invoker runs mcpCall steps; nil makes every mcpCall fail with
	// MCP_SERVER_NOT_CONFIGURED.
	Invoker duet.Invoker
	// Browser runs browser steps; nil makes them fail with
	// BROWSER_UNAVAILABLE.
	Browser Browser
	// Artifacts keeps screenshots; nil means screenshots are not kept.
	Artifacts Artifacts
	// AI is the model of AI steps (aiAssert, aiQuery, aiWaitFor) and their
	// budgets; nil makes them fail with LLM_NOT_CONFIGURED.
	AI *step.AIConfig
	// StepTimeout bounds a step without its own timeout; 0 means 30s.
	StepTimeout time.Duration
	// CaseTimeout bounds a case without its own timeout; 0 means 10m.
	CaseTimeout time.Duration
	// Parallel is how many cases of one run execute at once; 0 means 1.
	// A task's own parallel: (Task.Parallel) wins, within MaxParallel (0:
	// no bound beyond the task's).
	Parallel    int
	MaxParallel int
	// MaxBodyBytes limits how much of an HTTP response is read; 0 means 10 MiB.
	MaxBodyBytes int64
	// MaxVarBytes bounds the variables of one case together, measured as
	// JSON (each one is bounded by the expression budget, eval.MaxValueBytes);
	// 0 means 64 MiB. A step whose value would pass it fails with
	// BINDING_FAILED and saves nothing.
	MaxVarBytes int
	// Tools is where the executor's registrations are read, to tell a
	// call that would use the executor's credentials from one to a server
	// they have not registered; nil means the store when it keeps them (a
	// duet.MCPClientStore), else every call counts as using them.
	Tools ToolCatalog
	// Approver decides whether a step of a case someone else wrote (or a
	// post-run action) may call a tool with the executor's credentials;
	// nil means the executor's stored approvals (StoreApprover) when the
	// store keeps them, else every such call fails with APPROVAL_REQUIRED.
	Approver Approver
	// Trace is the trace mode of runs whose run and task choose none ("":
	// on-failure); TraceMaxBytes bounds one case's trace (0:
	// trace.DefaultMaxBytes) and TraceRecord a recording in the browser;
	// TraceReplay says which recordings run the screencast ("":
	// trace.ReplayKept). A trace is kept where Artifacts is a TraceSaver.
	Trace         trace.Mode
	TraceMaxBytes int64
	TraceRecord   trace.RecordOptions
	TraceReplay   trace.Replay
	// WriteWait bounds how long a write of a run (a step result, a final
	// state) waits for a database that is away; 0 means 30s. A write that
	// still fails stops the run at once and gives it back to the queue.
	WriteWait time.Duration
	// Secrets reads the executor's secrets steps read (${secrets.NAME});
	// nil makes every such step fail with SECRET_NOT_FOUND.
	Secrets SecretReader
	// Sessions keeps the browser sessions runs save (saveSession, session:);
	// nil makes those steps fail with SESSION_NOT_FOUND.
	Sessions SessionKeeper
	// CleanupTimeout bounds the afterEach steps of a case, and the
	// afterAll steps of a run, when they run after a failure, a timeout or
	// a cancellation; 0 means 2 minutes.
	CleanupTimeout time.Duration
	// OnEvent, if set, receives progress events (it must not block long).
	OnEvent func(Event)
	Logger  *slog.Logger
}

// Engine executes runs.
type Engine struct {
	store    duet.Store
	opts     Options
	log      *slog.Logger
	tools    ToolCatalog
	approver Approver
}

// positiveOr is v when it is more than zero, else def: an option's value
// or its default.
func positiveOr[T cmp.Ordered](v, def T) T {
	var zero T
	if v <= zero {
		return def
	}
	return v
}

// New returns an Engine over store.
func New(store duet.Store, opts Options) *Engine {
	opts.MaxCallDepth = positiveOr(opts.MaxCallDepth, calldepth.DefaultMax)
	if opts.HTTPClient == nil {
		opts.HTTPClient = func(netguard.Allowance) *http.Client {
			return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		}
	}
	opts.StepTimeout = positiveOr(opts.StepTimeout, 30*time.Second)
	opts.CaseTimeout = positiveOr(opts.CaseTimeout, 10*time.Minute)
	opts.Parallel = positiveOr(opts.Parallel, 1)
	opts.MaxVarBytes = positiveOr(opts.MaxVarBytes, 64<<20)
	opts.MaxBodyBytes = positiveOr(opts.MaxBodyBytes, 10<<20)
	opts.WriteWait = positiveOr(opts.WriteWait, storeWriteTimeout)
	opts.CleanupTimeout = positiveOr(opts.CleanupTimeout, 2*time.Minute)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{store: store, opts: opts, log: log, tools: opts.Tools, approver: opts.Approver}
	if e.tools == nil {
		e.tools, _ = store.(ToolCatalog)
	}
	if e.approver == nil {
		as, _ := store.(duet.ApprovalStore)
		e.approver = StoreApprover{Store: as}
	}
	return e
}

// Execute runs every unfinished execution of run, which the worker holds
// under lease (up to Options.Parallel at once), and writes the run's final
// state. Every write of the run is fenced by lease and waits up to 30 s for
// a database that is away (runWrites).
//
// The run ends without a verdict — Execute returns the cause, and the
// worker gives the run back to the queue — when ctx is cancelled with
// ErrShutdown, when the worker lost its lease (ErrLeaseLost), or when the
// database stayed away for a write (ErrStoreUnavailable); a write refused
// for another reason ends the run in error with the reason. With cause
// ErrCancelRequested, the run ends cancelled.
//
// When drain is closed (the worker is stopping), no case starts after it.
// A case in flight that can resume exactly at its next step elsewhere stops
// after its current step, recording where (executeCase); one that cannot
// goes on to its end. Execute returns ErrShutdown when some case did not
// end; ctx, cancelled with ErrShutdown when the grace period is over,
// interrupts the steps still running.
func (e *Engine) Execute(ctx context.Context, lease duet.Lease, run *duet.Run, drain <-chan struct{}) error {
	// Everything the run does acts for its executor, in its trace (what
	// outbound requests propagate: docs/operations.md).
	// Its calls are one deeper in a chain of Duet calls than the call that
	// started it (internal/calldepth).
	ctx = duet.NewContextWithCaller(ctx, duet.Caller{UserID: run.TriggeredBy, Source: duet.SourceEngine, TraceID: run.TraceID, CallDepth: run.CallDepth})
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w := &runWrites{store: e.store, lease: lease, wait: e.opts.WriteWait, stop: stop}
	// The run's task and cases are read whatever becomes of ctx: a
	// cancellation that arrives during these reads (just after the claim)
	// is seen by the loop below, and the run ends cancelled with its
	// post-run actions — not in error, nor left running.
	rctx := context.WithoutCancel(ctx)
	var task *duet.Task
	err := w.read(rctx, func(ctx context.Context) (err error) {
		task, err = e.store.FindTaskByID(ctx, "", run.TaskID)
		return err
	})
	if errors.Is(err, ErrStoreUnavailable) {
		return err
	} else if err != nil {
		return e.finishRun(rctx, w, run, duet.StatusError, duet.ErrorCode(err), "task not available: "+duet.ErrorMessage(err))
	}
	var execs []*duet.Execution
	if err := w.read(rctx, func(ctx context.Context) (err error) { execs, err = e.store.FindExecutions(ctx, run.ID); return err }); err != nil {
		return err
	}
	todo, done := unfinished(execs)
	// The secrets this run comes to know (the executor's credentials,
	// values seen under sensitive keys), scrubbed from everything it keeps.
	secrets := redact.NewSet()
	rs, err := newRunScope(run, task, secrets)
	if err != nil {
		return e.finishRun(rctx, w, run, duet.StatusError, duet.ErrorCode(err), "the run's environment: "+duet.ErrorMessage(err))
	}
	if todo, err = e.beforeAll(ctx, w, rs, todo, drain); err != nil {
		return err
	}
	cs := caseSet{run: run, total: len(execs), done: done, known: map[string]int{}}
	e.runCases(ctx, w, rs, &cs, todo, drain)
	if ctx.Err() != nil {
		return e.endCancelled(ctx, w, rs)
	}
	if cs.ended < len(todo) {
		return ErrShutdown // drained: cases left for the next holder
	}
	return e.judge(ctx, w, rs, cs.known)
}

// unfinished splits a run's executions into those still to run — the
// unfinished, and those failed with a retry their last holder did not
// begin — and the number already done.
func unfinished(execs []*duet.Execution) (todo []*duet.Execution, done int) {
	for _, x := range execs {
		if x.Status.Final() && !retryable(x) {
			done++
		} else {
			todo = append(todo, x)
		}
	}
	return todo, done
}

// beforeAll runs the task's beforeAll once, before the first case (again
// on a later attempt, unless an earlier one stored it whole); if it fails,
// no case runs: each ends failed, naming the hook, and the cases left to
// run are none. A non-nil error is what Execute returns: the run was
// handed back meanwhile (stopped).
func (e *Engine) beforeAll(ctx context.Context, w *runWrites, rs *runScope, todo []*duet.Execution, drain <-chan struct{}) ([]*duet.Execution, error) {
	run, task := rs.run, rs.task
	if len(task.BeforeAll) == 0 || len(todo) == 0 || ctx.Err() != nil || closed(drain) {
		return todo, nil
	}
	vars, ok := beforeAllDone(run, task)
	if !ok {
		var status duet.RunStatus
		var msg string
		vars, status, msg = e.runHook(ctx, w, rs, duet.HookBeforeAll, task.BeforeAll)
		if handedBack(ctx) {
			return nil, e.stopped(ctx, w, run)
		}
		if status != duet.StatusPassed && ctx.Err() == nil {
			for _, x := range todo {
				if !e.skipExecution(ctx, w, x, duet.StatusFailed, duet.CodeHookFailed, msg) {
					return nil, e.stopped(ctx, w, run)
				}
			}
			todo = nil
		}
	}
	rs.hookVars = vars
	return todo, nil
}

// caseSet is the progress of a run's cases while they execute.
type caseSet struct {
	run   *duet.Run
	total int // executions of the run
	mu    sync.Mutex
	done  int            // executions ended, here or before
	ended int            // executions ended here
	known map[string]int // execution → secrets it was scrubbed with
}

// runCases executes todo's cases, up to the task's parallel at once, each
// reported as it ends (Event). No case starts once ctx ends or drain is
// closed; a case stopped short (resumed by the next holder) is not counted.
func (e *Engine) runCases(ctx context.Context, w *runWrites, rs *runScope, cs *caseSet, todo []*duet.Execution, drain <-chan struct{}) {
	sem := make(chan struct{}, e.parallel(rs.task))
	var wg sync.WaitGroup
	ended := make([]chan struct{}, len(todo))
	for i := range ended {
		ended[i] = make(chan struct{})
	}
	todo = sessionOrder(todo)
	waits := sessionWaits(todo)
	for i, x := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		case <-drain:
		}
		if ctx.Err() != nil || closed(drain) {
			break // no case starts once the worker is stopping
		}
		wg.Go(func() {
			defer func() { <-sem }()
			defer close(ended[i])
			for _, j := range waits[i] {
				<-ended[j] // started before this one: it ends
			}
			k, fin := e.executeCase(ctx, w, rs, x, drain)
			if !fin {
				return // stopped short: resumed by the next holder
			}
			cs.mu.Lock()
			cs.known[x.ID] = k
			cs.done++
			cs.ended++
			d := cs.done
			cs.mu.Unlock()
			e.emit(Event{RunID: cs.run.ID, ExecutionID: x.ID, CaseTitle: x.CaseTitle, Status: x.Status, Done: d, Total: cs.total})
		})
	}
	wg.Wait()
}

// sessionsOf lists the browser sessions x starts from (session: NAME) and
// the ones it saves (saveSession: NAME).
func sessionsOf(x *duet.Execution) (uses, saves []string) {
	duet.WalkSteps(x.Steps, func(st *duet.Step) bool {
		if st.Browser != nil && st.Browser.Session != "" {
			switch st.Kind {
			case "session":
				uses = append(uses, st.Browser.Session)
			case "saveSession":
				saves = append(saves, st.Browser.Session)
			}
		}
		return true
	})
	return uses, saves
}

// sessionOrder returns todo with every case that saves a browser session
// before the cases that start from it, the order otherwise kept (the
// cases run in their stored order, which need not be the file's; the
// compiler checked that a saver exists above each user in the file).
func sessionOrder(todo []*duet.Execution) []*duet.Execution {
	unsaved := map[string]int{} // session → savers not placed yet
	uses := make([][]string, len(todo))
	saves := make([][]string, len(todo))
	for i, x := range todo {
		uses[i], saves[i] = sessionsOf(x)
		for _, n := range saves[i] {
			unsaved[n]++
		}
	}
	out := make([]*duet.Execution, 0, len(todo))
	placed := make([]bool, len(todo))
	for len(out) < len(todo) {
		next := -1
		for i := range todo {
			if placed[i] {
				continue
			}
			ready := true
			for _, n := range uses[i] {
				if unsaved[n] > 0 && !slices.Contains(saves[i], n) {
					ready = false
				}
			}
			if ready {
				next = i
				break
			}
			if next == -1 {
				next = -2 - i // the first unplaced case, for a cycle
			}
		}
		if next < 0 {
			next = -2 - next
		}
		placed[next] = true
		out = append(out, todo[next])
		for _, n := range saves[next] {
			unsaved[n]--
		}
	}
	return out
}

// sessionWaits gives, for each case of todo (in sessionOrder), the earlier
// cases that save a browser session it starts from: with cases in
// parallel it starts once those have ended. Each of them started before it
// (todo's order), so waiting holds no slot another needs.
func sessionWaits(todo []*duet.Execution) [][]int {
	waits := make([][]int, len(todo))
	savers := map[string][]int{}
	for i, x := range todo {
		uses, saves := sessionsOf(x)
		for _, n := range uses {
			waits[i] = append(waits[i], savers[n]...)
		}
		for _, n := range saves {
			savers[n] = append(savers[n], i)
		}
	}
	return waits
}

// endCancelled ends a run whose context ended while its cases ran: handed
// back (stopped), or cancelled — then after its afterAll and post-run
// actions.
func (e *Engine) endCancelled(ctx context.Context, w *runWrites, rs *runScope) error {
	run := rs.run
	if handedBack(ctx) {
		return e.stopped(ctx, w, run)
	}
	msg := "cancelled"
	if run.CancelRequested || errors.Is(context.Cause(ctx), ErrCancelRequested) {
		msg = "cancelled at the user's request"
	}
	// The task's afterAll runs after a cancellation too.
	if !e.afterAll(ctx, w, rs) {
		return e.stopped(ctx, w, run)
	}
	run.PostRun = e.postRun(ctx, run, rs.task, nil, verdict{duet.StatusCancelled, duet.CodeCancelled, msg}, rs.secrets)
	return e.finishRun(context.WithoutCancel(ctx), w, run, duet.StatusCancelled, duet.CodeCancelled, msg)
}

// judge ends a run whose every case ended: it reads the results back, runs
// the task's afterAll, scrubs what the cases stored with every secret the
// run came to know, and writes the verdict after the post-run actions.
func (e *Engine) judge(ctx context.Context, w *runWrites, rs *runScope, known map[string]int) error {
	run := rs.run
	var execs []*duet.Execution
	if err := w.read(ctx, func(ctx context.Context) (err error) { execs, err = e.store.FindExecutions(ctx, run.ID); return err }); err != nil {
		return err
	}
	// A verdict is written only with every result it summarises: an
	// execution not finished, or short of a step result, is not judged.
	for _, x := range execs {
		if !x.Status.Final() || len(x.Results) < len(x.Steps) {
			return e.finishRun(context.WithoutCancel(ctx), w, run, duet.StatusError, duet.CodeInternal, duet.ErrorMessage(duet.Incomplete(run.ID, x.CaseTitle, x.Status, len(x.Results), len(x.Steps))))
		}
	}
	// The task's afterAll, once every case has ended.
	if !e.afterAll(ctx, w, rs) {
		return e.stopped(ctx, w, run)
	}
	if e.rescrubRun(ctx, w, execs, rs.secrets, known); handedBack(ctx) {
		return e.stopped(ctx, w, run)
	}
	v := runVerdict(run, execs, rs.secrets)
	// The task's post-run actions: notes on the run, never its verdict.
	run.PostRun = e.postRun(ctx, run, rs.task, execs, v, rs.secrets)
	return e.finishRun(ctx, w, run, v.status, v.code, v.msg)
}

// runVerdict is the verdict of a run from its executions: an error in any
// case, else a failure, else cancelled when a case was; a failed afterAll
// (not optional) fails a run whose cases passed, naming the hook.
func runVerdict(run *duet.Run, execs []*duet.Execution, secrets *redact.Set) verdict {
	v := verdict{status: duet.StatusPassed}
	for _, x := range execs {
		x.ErrorMessage = secrets.Scrub(x.ErrorMessage)
		switch x.Status {
		case duet.StatusError:
			v = verdict{duet.StatusError, x.ErrorCode, fmt.Sprintf("case %q: %s", x.CaseTitle, x.ErrorMessage)}
		case duet.StatusFailed:
			if v.status == duet.StatusPassed {
				v = verdict{duet.StatusFailed, x.ErrorCode, fmt.Sprintf("case %q: %s", x.CaseTitle, x.ErrorMessage)}
			}
		case duet.StatusCancelled, duet.StatusSkipped:
			if v.status == duet.StatusPassed {
				v = verdict{duet.StatusCancelled, duet.CodeCancelled, "cancelled"}
			}
		}
	}
	if v.status != duet.StatusPassed {
		return v
	}
	for _, r := range run.Hooks {
		if r.Hook == duet.HookAfterAll && r.Status != duet.StatusPassed && r.Status != duet.StatusSkipped && !r.Optional {
			v.status, v.code = duet.StatusFailed, duet.CodeHookFailed
			if r.Status == duet.StatusError {
				v.status = duet.StatusError
			}
			v.msg = secrets.Scrub(fmt.Sprintf("afterAll hook failed at step %d (%s): %s: %s", r.Index+1, r.Name, r.ErrorCode, r.ErrorMessage))
			break
		}
	}
	return v
}

// parallel is how many cases of a run of task execute at once: the task's
// parallel:, within Options.MaxParallel, else Options.Parallel.
func (e *Engine) parallel(task *duet.Task) int {
	if task.Parallel <= 0 {
		return e.opts.Parallel
	}
	if e.opts.MaxParallel > 0 {
		return min(task.Parallel, e.opts.MaxParallel)
	}
	return task.Parallel
}

// afterAll runs the task's afterAll steps under the cleanup context (a
// cancelled run runs them too). It reports false when the run was handed
// back meanwhile (a write failed, the worker lost the run).
func (e *Engine) afterAll(ctx context.Context, w *runWrites, rs *runScope) bool {
	if len(rs.task.AfterAll) == 0 || handedBack(ctx) {
		return !handedBack(ctx)
	}
	cctx, stop := e.cleanupContext(ctx)
	defer stop()
	e.runHook(cctx, w, rs, duet.HookAfterAll, rs.task.AfterAll)
	return !handedBack(ctx)
}

// stopped ends a run whose context ended short of a verdict (handedBack):
// a write refused for good ends it in error with the reason; otherwise the
// cause is returned, for the worker to give the run back.
func (e *Engine) stopped(ctx context.Context, w *runWrites, run *duet.Run) error {
	cause := context.Cause(ctx)
	var wf *writeFailed
	if errors.As(cause, &wf) {
		return e.finishRun(context.WithoutCancel(ctx), w, run, duet.StatusError, duet.ErrorCode(wf.err), wf.Error())
	}
	return cause
}

// closed reports whether ch is closed (nil never is).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// finishRun writes the run's final state under the worker's lease; it
// returns nil, or the cause the run stopped with when the write failed.
func (e *Engine) finishRun(ctx context.Context, w *runWrites, run *duet.Run, status duet.RunStatus, code duet.Code, msg string) error {
	now := time.Now()
	run.Status, run.ErrorCode, run.ErrorMessage, run.FinishedAt = status, code, msg, &now
	if err := w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.FinishRun(ctx, l, run) }); err != nil {
		return fmt.Errorf("finishing run %s: %w", run.ID, err)
	}
	return nil
}

func (e *Engine) emit(ev Event) {
	if e.opts.OnEvent != nil {
		e.opts.OnEvent(ev)
	}
}

// persist saves a value for storage: normalized, redacted (by key, and by
// value with the run's secrets) and bounded.
func persist(secrets *redact.Set, v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(secrets.Value(v))
	if err != nil {
		return nil
	}
	const max = 64 << 10
	if len(b) > max {
		s, _ := json.Marshal(fmt.Sprintf("(%d bytes; truncated) %s", len(b), b[:max]))
		return s
	}
	return b
}
