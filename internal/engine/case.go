package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/eval"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/step"
)

// caseRun is the state of one execution while it runs.
type caseRun struct {
	e       *Engine
	w       *runWrites // the run's writes, under the worker's lease
	run     *duet.Run
	task    *duet.Task
	x       *duet.Execution
	vars    map[string]any // builtins and saved variables
	saved   map[string]any // saved variables only (persisted, redacted)
	sizes   map[string]int // the size of each saved variable as JSON (keep)
	size    int            // their sum, within Options.MaxVarBytes
	session BrowserSession
	secrets *redact.Set  // the run's secrets: scrubbed from all it keeps
	http    *http.Client // the client of its http steps, made for it on first use (env.go)

	authorKnown bool   // authorName was looked up
	authorName  string // who wrote the case version ("" unknown)

	tracer Tracer         // the session recording the case's trace (trace.go), or nil
	replay bool           // the trace records the replay (trace.Replay)
	shots  map[int][]byte // failure screenshots by step, for the trace

	// dests are where the case can send data to (DestinationsOf), once a
	// call needed the executor's approval.
	dests *duet.Destinations

	// stored are the variables as last stored, with the last step result
	// (persistVars): what a resumed case would go on with.
	stored map[string]any

	// running are the results of the steps now running, outermost first:
	// a flow step's result, then the result of the step it runs, and so
	// on (RunSteps keeps each result among its parent's children).
	running []*duet.StepResult
	// kept counts the children the outermost step running keeps
	// (duet.MaxChildResults).
	kept int
	// secretVals are the executor's secrets the case's steps read, as
	// loaded when it started (loadSecrets); secretErr the error of that.
	secretVals map[string]string
	secretErr  error
	// hooks, when set, makes this the run's beforeAll or afterAll rather
	// than a case (hooks.go): its results are the run's, and its calls
	// are approved as the task's hooks.
	hooks *runHooks
	// aiTokens and aiTime count the tokens the run's AI steps spent and
	// how long they waited for the model (the run's scope holds them:
	// every case of the run adds to them).
	aiTokens, aiTime *atomic.Int64
	// tryout makes this a tryout of steps on a live page (try.go).
	tryout bool
}

// keep accounts for the variable name taking the value v: the case's
// variables together stay within Options.MaxVarBytes, or the step that
// would pass it fails with BINDING_FAILED.
func (cr *caseRun) keep(name string, v any) error {
	limit := cr.e.opts.MaxVarBytes
	n := eval.Size(v, limit)
	size := cr.size - cr.sizes[name] + n
	if size > limit {
		return duet.Errorf(duet.CodeBindingFailed, "saving %s would bring the case's variables to more than %d bytes as JSON, the limit of a case's variables together; keep only the part you need (extract, a smaller response)", name, limit)
	}
	if cr.sizes == nil {
		cr.sizes = map[string]int{}
	}
	cr.sizes[name], cr.size = n, size
	return nil
}

// executeCase runs x and returns how many secrets the run knew when the
// case's results were last scrubbed (rescrubRun scrubs them again if the
// run learns more), and whether the case ended (its final state written).
// A case stops short, unfinished, when the run stops without a verdict
// (handedBack): the write that failed, or the worker's stop, says why.
//
// A case an earlier holder suspended (SuspendExecution) resumes at that
// step, with the results and variables stored before it. When drain closes
// (the worker is stopping) a case that can resume exactly at its next step
// stops there, recording it; one that cannot — a browser page, variables
// not stored whole — goes on to its end (or until the grace period is over).
//
// A case that fails with retries left runs again from its start, in a new
// browser context with its beforeEach and afterEach steps
// (executeAttempt): each attempt ends (its final state written) before the
// store keeps it among the execution's attempts and the next one begins
// (RetryExecution), so every attempt's results and evidence are kept
// whole. A case that fails and then passes is flaky.
func (e *Engine) executeCase(ctx context.Context, w *runWrites, rs *runScope, x *duet.Execution, drain <-chan struct{}) (known int, finished bool) {
	for {
		if retryable(x) {
			// A failed attempt with retries left (its holder may have
			// stopped before the retry began): the next attempt.
			if ctx.Err() != nil {
				return known, true // cancelled: the failed attempt stands
			}
			if err := w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.RetryExecution(ctx, l, x) }); err != nil {
				e.log.ErrorContext(ctx, "retrying a case", "execution", x.ID, "err", err)
				return 0, false
			}
			e.log.InfoContext(ctx, "case retried", "run", rs.run.ID, "execution", x.ID, "attempt", x.Attempt, "of", x.Retries+1)
		}
		known, finished = e.executeAttempt(ctx, w, rs, x, drain)
		if !finished || !retryable(x) || handedBack(ctx) {
			return known, finished
		}
	}
}

// retryable reports whether x ended its attempt failed (an assertion, a
// step, a timeout — not a cancellation) with retries left.
func retryable(x *duet.Execution) bool {
	return (x.Status == duet.StatusFailed || x.Status == duet.StatusError) && max(x.Attempt, 1) <= x.Retries
}

// executeAttempt runs one attempt at x (executeCase): it starts the
// attempt, runs its steps within the case's timeout and stores how it
// ended.
func (e *Engine) executeAttempt(ctx context.Context, w *runWrites, rs *runScope, x *duet.Execution, drain <-chan struct{}) (known int, finished bool) {
	cr, from, ok := e.startAttempt(ctx, w, rs, x)
	if !ok {
		return 0, false
	}
	defer cr.end()
	timeout := e.opts.CaseTimeout
	if x.TimeoutMs > 0 {
		timeout = time.Duration(x.TimeoutMs) * time.Millisecond
	}
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errCaseTimeout)
	defer cancel()
	afterRan, ok := cr.runSteps(ctx, cctx, from, drain)
	if !ok {
		return 0, false
	}
	return cr.finishAttempt(ctx, cctx, afterRan)
}

// startAttempt stores that an attempt at x starts — from the step it
// resumes at (from), with the variables stored before it — and returns the
// attempt's caseRun; false when the start could not be stored.
func (e *Engine) startAttempt(ctx context.Context, w *runWrites, rs *runScope, x *duet.Execution) (cr *caseRun, from int, ok bool) {
	run := rs.run
	from = resumeAt(x)
	x.ResumeFrom = from // the store starts the execution there (and clears it)
	now := time.Now()
	x.StartedAt = &now
	if err := w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.StartExecution(ctx, l, x) }); err != nil {
		e.log.ErrorContext(ctx, "starting execution", "execution", x.ID, "err", err)
		return nil, 0, false
	}
	e.emit(Event{RunID: run.ID, ExecutionID: x.ID, CaseTitle: x.CaseTitle, Status: duet.StatusRunning})
	cr = &caseRun{e: e, w: w, run: run, task: rs.task, x: x, saved: map[string]any{}, secrets: rs.secrets, vars: rs.builtins(), aiTokens: &rs.aiTokens, aiTime: &rs.aiTime}
	if x.Row != nil {
		cr.vars["row"] = x.Row
	}
	cr.loadSecrets(ctx, x.Steps)
	if from > 0 {
		for k, v := range x.Vars {
			if cr.keep(k, v) == nil {
				cr.saved[k], cr.vars[k] = v, v
			}
		}
		cr.stored = x.Vars
		e.log.InfoContext(ctx, "case resumed", "run", run.ID, "execution", x.ID, "step", from)
	}
	return cr, from, true
}

// attemptState is how an attempt's steps have gone so far.
type attemptState struct {
	failed bool             // the case failed (a step, a hook, its time)
	soft   *duet.StepResult // the first soft assertion that failed
}

// runSteps runs the attempt's steps from step from: the case's steps
// under cctx until one fails or cctx ends, the rest recorded skipped. The
// afterEach steps run whatever became of the case before them — failed,
// out of time, cancelled — under a context of their own (cleanupContext),
// unless the run is handed back; afterRan says whether that context was
// opened. ok false: the attempt stopped short (handed back, suspended for
// the next holder, a write failed) and is left as it is.
func (cr *caseRun) runSteps(ctx, cctx context.Context, from int, drain <-chan struct{}) (afterRan, ok bool) {
	x := cr.x
	x.Status = duet.StatusPassed
	var as attemptState
	for _, r := range x.Results {
		if r.Soft && as.soft == nil {
			as.soft = r // kept from before a resume
		}
	}
	var after context.Context
	for i := from; i < len(x.Steps); i++ {
		st := &x.Steps[i]
		res := &duet.StepResult{Index: st.Index, Kind: st.Kind, Name: st.Name, Hook: st.Hook, Status: duet.StatusSkipped}
		if !as.failed && cctx.Err() == nil && closed(drain) && cr.resumable(i) {
			cr.suspend(ctx, i) // the worker is stopping: the next holder goes on here
			return false, false
		}
		switch {
		case st.Hook == duet.HookAfterEach:
			if after == nil {
				var stop context.CancelFunc
				after, stop = cr.e.cleanupContext(ctx)
				defer stop()
			}
			ok = cr.afterEachStep(ctx, cctx, after, st, res, &as)
		case as.failed || cctx.Err() != nil:
			ok = cr.skipStep(ctx, cctx, res, &as)
		default:
			ok = cr.caseStep(ctx, cctx, i, st, res, &as)
		}
		if !ok {
			return false, false
		}
	}
	if r := as.soft; r != nil && x.Status == duet.StatusPassed {
		// A soft assertion failed: the case went on, and fails now.
		x.Status, x.ErrorCode = duet.StatusFailed, r.ErrorCode
		x.ErrorMessage = fmt.Sprintf("step %d (%s), a soft assertion: %s", r.Index+1, r.Name, r.ErrorMessage)
	}
	return after != nil, true
}

// afterEachStep runs st, an afterEach step, under after, and stores its
// result; a failed afterEach (not optional) fails a case that had not
// failed yet, naming the hook.
func (cr *caseRun) afterEachStep(ctx, cctx, after context.Context, st *duet.Step, res *duet.StepResult, as *attemptState) bool {
	x := cr.x
	if handedBack(ctx) {
		return false
	}
	if cctx.Err() != nil && !as.failed {
		as.failed = true
		x.Status, x.ErrorCode, x.ErrorMessage = statusOfCtx(ctx, cctx)
	}
	if after.Err() == nil {
		cr.runStep(after, st, res)
	}
	if handedBack(ctx) || !cr.saveResult(ctx, res) {
		return false
	}
	cr.e.emit(Event{RunID: cr.run.ID, ExecutionID: x.ID, CaseTitle: x.CaseTitle, Step: res, Status: res.Status})
	if res.Status != duet.StatusPassed && res.Status != duet.StatusSkipped && !res.Optional && !as.failed {
		as.failed = true
		x.Status, x.ErrorCode = res.Status, duet.CodeHookFailed
		x.ErrorMessage = hookFailure(st, res)
	}
	return true
}

// skipStep stores res, a step's result skipped because the case failed or
// its context ended (which fails the case, if nothing did before).
func (cr *caseRun) skipStep(ctx, cctx context.Context, res *duet.StepResult, as *attemptState) bool {
	if handedBack(ctx) {
		return false // resumable: leave the execution as it is
	}
	if cctx.Err() != nil && !as.failed {
		as.failed = true
		cr.x.Status, cr.x.ErrorCode, cr.x.ErrorMessage = statusOfCtx(ctx, cctx)
	}
	return cr.saveResult(ctx, res)
}

// caseStep runs st, the case's step i, and stores its result; a step that
// fails (not optional, not soft) fails the case.
func (cr *caseRun) caseStep(ctx, cctx context.Context, i int, st *duet.Step, res *duet.StepResult, as *attemptState) bool {
	x := cr.x
	cr.runStep(cctx, st, res)
	if handedBack(ctx) {
		// The step's result is not kept: it runs again, and so do the
		// steps before it unless the case can resume here.
		if errors.Is(context.Cause(ctx), ErrShutdown) && cr.resumable(i) {
			cr.suspend(ctx, i)
		}
		return false
	}
	if !cr.saveResult(ctx, res) {
		return false
	}
	cr.e.emit(Event{RunID: cr.run.ID, ExecutionID: x.ID, CaseTitle: x.CaseTitle, Step: res, Status: res.Status})
	if res.Status != duet.StatusPassed && !res.Optional && !res.Soft {
		as.failed = true
		x.Status, x.ErrorCode = res.Status, res.ErrorCode
		x.ErrorMessage = fmt.Sprintf("step %d (%s): %s", st.Index+1, st.Name, res.ErrorMessage)
		if st.Hook == duet.HookBeforeEach && res.Status == duet.StatusFailed {
			x.ErrorCode, x.ErrorMessage = duet.CodeHookFailed, hookFailure(st, res)
		}
	}
	if res.Soft && as.soft == nil {
		as.soft = res
	}
	return true
}

// finishAttempt stores how the attempt ended — out of time when cctx
// ended with no afterEach run, flaky when it passed on a retry — with its
// trace, its results scrubbed of every secret known by now and its
// variables. known is how many secrets it was scrubbed with.
func (cr *caseRun) finishAttempt(ctx, cctx context.Context, afterRan bool) (known int, finished bool) {
	x := cr.x
	if handedBack(ctx) {
		return 0, false
	}
	if x.Status == duet.StatusPassed && cctx.Err() != nil && !afterRan {
		x.Status, x.ErrorCode, x.ErrorMessage = statusOfCtx(ctx, cctx)
	}
	if x.Status == duet.StatusPassed && x.Attempt > 1 {
		x.Status = duet.StatusFlaky // failed, then passed on a retry
	}
	end := time.Now()
	x.FinishedAt = &end
	cr.finishTrace(ctx)
	known = cr.secrets.Len()
	if !cr.rescrub(ctx) {
		return 0, false
	}
	x.ErrorMessage = cr.secrets.Scrub(x.ErrorMessage)
	x.Vars = cr.persistVars()
	if err := cr.w.do(ctx, func(ctx context.Context, l duet.Lease) error { return cr.e.store.FinishExecution(ctx, l, x) }); err != nil {
		cr.e.log.ErrorContext(ctx, "finishing execution", "execution", x.ID, "err", err)
		return 0, false
	}
	return known, true
}

// hookFailure says that the step st of a hook failed, with its result.
func hookFailure(st *duet.Step, res *duet.StepResult) string {
	return fmt.Sprintf("%s hook failed at step %d (%s): %s: %s", st.Hook, st.Index+1, st.Name, res.ErrorCode, res.ErrorMessage)
}

var errCaseTimeout = errors.New("case timeout")

// statusOfCtx says how a case whose context ended ends.
func statusOfCtx(runCtx, caseCtx context.Context) (duet.RunStatus, duet.Code, string) {
	if runCtx.Err() != nil {
		return duet.StatusCancelled, duet.CodeCancelled, "cancelled"
	}
	if errors.Is(context.Cause(caseCtx), errCaseTimeout) {
		return duet.StatusFailed, duet.CodeCaseTimeout, "the case ran out of time"
	}
	return duet.StatusCancelled, duet.CodeCancelled, "cancelled"
}

// saveResult is the one place a step result is kept (and then shown): its
// output and error message are scrubbed of the run's secrets, and so are
// the variables saved with it. It reports whether the result was stored;
// if not, the run has stopped (runWrites) and the case must stop too.
func (cr *caseRun) saveResult(ctx context.Context, res *duet.StepResult) bool {
	res.ErrorMessage = cr.secrets.Scrub(res.ErrorMessage)
	cr.x.Results = append(cr.x.Results, res)
	return cr.store(ctx, res)
}

func (cr *caseRun) store(ctx context.Context, res *duet.StepResult) bool {
	vars := cr.persistVars()
	if err := cr.w.do(ctx, func(ctx context.Context, l duet.Lease) error {
		return cr.e.store.SaveStepResult(ctx, l, cr.x.ID, res, vars)
	}); err != nil {
		cr.e.log.ErrorContext(ctx, "saving step result", "execution", cr.x.ID, "step", res.Index, "err", cr.secrets.Scrub(err.Error()))
		return false
	}
	cr.stored = vars
	return true
}

// resumeAt returns the step x resumes at: the one its last holder recorded
// (SuspendExecution) when the results before it are there, each passed (or
// an optional failure) and none of a step that drove a browser (itself, or
// a step it ran: the steps of an if, a loop, a flow); else 0, from the
// start. A flow step resumes as a whole: a case is suspended only between
// its own steps, never inside one.
func resumeAt(x *duet.Execution) int {
	n := x.ResumeFrom
	if n <= 0 || n > len(x.Steps) || len(x.Results) < n {
		return 0
	}
	for j, r := range x.Results[:n] {
		if r.Index != j || r.Status != duet.StatusPassed && !r.Optional || step.UsesBrowser(&x.Steps[j]) {
			return 0
		}
	}
	return n
}

// resumable reports whether the case, its steps before i stored, could go
// on at step i with another worker exactly as it would here: none of them
// failed (the case is passing so far), none drove a browser page (a page
// does not move between workers), and the variables were stored whole —
// nothing in them redacted, which a resumed case would read as the mask.
func (cr *caseRun) resumable(i int) bool {
	if i == 0 || cr.x.Status != duet.StatusPassed {
		return false
	}
	for j := range cr.x.Steps[:i] {
		if step.UsesBrowser(&cr.x.Steps[j]) {
			return false
		}
	}
	for _, r := range cr.x.Results {
		if r.Status != duet.StatusPassed && !r.Optional {
			return false
		}
	}
	b, err := json.Marshal(cr.stored)
	return err == nil && !bytes.Contains(b, []byte(redact.Mask))
}

// suspend records that the case, stopped before step i, resumes there.
func (cr *caseRun) suspend(ctx context.Context, i int) {
	if err := cr.w.do(ctx, func(ctx context.Context, l duet.Lease) error { return cr.e.store.SuspendExecution(ctx, l, cr.x.ID, i) }); err != nil {
		cr.e.log.WarnContext(ctx, "recording where a case resumes", "execution", cr.x.ID, "step", i, "err", err)
		return
	}
	cr.e.log.InfoContext(ctx, "case suspended: it resumes at its next step", "run", cr.run.ID, "execution", cr.x.ID, "step", i)
}

// rescrub scrubs the results saved earlier of secrets learned since (a
// value seen first under an innocent key, later under a sensitive one) and
// stores again the ones that change. It reports whether every write went
// through.
func (cr *caseRun) rescrub(ctx context.Context) bool {
	for _, res := range cr.x.Results {
		if scrubResult(cr.secrets, res) && !cr.store(ctx, res) {
			return false
		}
	}
	return true
}

// scrubResult scrubs a kept step result (and the results of the steps it
// ran) of secrets and reports whether it changed.
func scrubResult(secrets *redact.Set, res *duet.StepResult) bool {
	changed := false
	for _, c := range res.Children {
		if scrubResult(secrets, c) {
			changed = true
		}
	}
	if msg := secrets.Scrub(res.ErrorMessage); msg != res.ErrorMessage {
		res.ErrorMessage, changed = msg, true
	}
	if len(res.Output) > 0 {
		var v any
		if json.Unmarshal(res.Output, &v) == nil {
			if out := persist(secrets, v); string(out) != string(res.Output) {
				res.Output, changed = out, true
			}
		}
	}
	return changed
}

// rescrubRun scrubs, once a run's cases are done, what the cases that
// ended earlier kept of secrets the run learned after they ended (a token
// a later case obtained, which an earlier case's output already held):
// known says how many secrets each execution was scrubbed with (none
// recorded: an execution finished by an earlier worker, scrubbed again).
func (e *Engine) rescrubRun(ctx context.Context, w *runWrites, execs []*duet.Execution, secrets *redact.Set, known map[string]int) {
	n := secrets.Len()
	if n == 0 {
		return
	}
	for _, x := range execs {
		if k, ok := known[x.ID]; ok && k >= n {
			continue
		}
		before, _ := json.Marshal(x.Vars)
		var vars map[string]any
		if x.Vars != nil {
			vars, _ = secrets.Value(x.Vars).(map[string]any)
		}
		after, _ := json.Marshal(vars)
		varsChanged := string(before) != string(after)
		for _, res := range x.Results {
			if scrubResult(secrets, res) || varsChanged {
				varsChanged = false // saved with this result
				if err := w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.SaveStepResult(ctx, l, x.ID, res, vars) }); err != nil {
					e.log.ErrorContext(ctx, "saving a scrubbed step result", "execution", x.ID, "step", res.Index, "err", secrets.Scrub(err.Error()))
					return
				}
			}
		}
		msg := secrets.Scrub(x.ErrorMessage)
		if msg != x.ErrorMessage || varsChanged {
			x.ErrorMessage, x.Vars = msg, vars
			if err := w.do(ctx, func(ctx context.Context, l duet.Lease) error { return e.store.FinishExecution(ctx, l, x) }); err != nil {
				e.log.ErrorContext(ctx, "saving a scrubbed execution", "execution", x.ID, "err", err)
				return
			}
		}
	}
}

// persistVars returns the saved variables as they are stored: redacted,
// including variables whose own name says they hold a secret, and scrubbed
// of the run's secrets.
func (cr *caseRun) persistVars() map[string]any {
	out := make(map[string]any, len(cr.saved))
	for k, v := range maps.All(cr.saved) {
		if redact.IsSensitiveKey(k) && v != nil {
			out[k] = redact.Mask
			continue
		}
		out[k] = cr.secrets.Value(v)
	}
	return out
}

// learn adds to the run's secrets what a step's value reveals: everything
// under a sensitive key or header, and the value itself when the variable's
// name says it is a secret.
func (cr *caseRun) learn(saveAs string, value any) {
	if value == nil {
		return
	}
	if saveAs != "" {
		cr.secrets.Learn(map[string]any{saveAs: value})
		return
	}
	cr.secrets.Learn(value)
}

// runStep runs one step under its timeout and fills res. A flow step has
// no timeout of its own unless it names one: each step it runs has its
// own.
func (cr *caseRun) runStep(ctx context.Context, st *duet.Step, res *duet.StepResult) {
	timeout := cr.e.opts.StepTimeout
	if st.TimeoutMs > 0 {
		timeout = time.Duration(st.TimeoutMs) * time.Millisecond
	}
	flow := step.IsFlow(st.Kind)
	start := time.Now()
	res.StartedAt = &start
	res.Status = duet.StatusRunning
	if len(cr.running) == 0 {
		cr.kept = 0
	}
	cr.running = append(cr.running, res)
	defer func() { cr.running = cr.running[:len(cr.running)-1] }()

	var (
		saveAs string
		value  any
		err    error
	)
	err = cr.checkSecrets(st)
	if err == nil && step.NeedsBrowser(st.Kind) && cr.session == nil {
		// Starting a browser, or waiting for a free one, is not the step's
		// work: it runs on the case's time, not the step's.
		_, err = cr.page(ctx)
	}
	sctx, cancel := context.WithTimeoutCause(ctx, timeout, errStepTimeout)
	if flow && st.TimeoutMs == 0 {
		sctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	if err == nil {
		cr.traceBegin(st)
		saveAs, value, err = cr.dispatch(sctx, st)
	}

	end := time.Now()
	res.FinishedAt = &end
	res.DurationMs = end.Sub(start).Milliseconds()
	if kerr := cr.keepOutput(res, saveAs, value); err == nil {
		err = kerr
	}
	var shot []byte // the failure screenshot, for the trace
	defer func() { cr.traceEnd(ctx, st, res, shot) }()
	if err == nil {
		res.Status = duet.StatusPassed
		return
	}
	cr.failStep(ctx, sctx, st, res, err, timeout)
	// A failed step leaves a screenshot of the page as it was (a flow
	// step's failed step has left it).
	if cr.session != nil && !flow && res.Status != duet.StatusCancelled && cr.e.opts.Artifacts != nil {
		shot = cr.failureShot(ctx, st, res)
	}
}

// keepOutput saves value under saveAs (within the variables' bounds; an
// error when it is refused) and stores it as the step's output: redacted,
// masked whole under a sensitive name. The run learns the secrets in it.
func (cr *caseRun) keepOutput(res *duet.StepResult, saveAs string, value any) (err error) {
	if saveAs != "" && value != nil {
		if err = cr.keep(saveAs, value); err != nil {
			value = nil
		}
	}
	cr.learn(saveAs, value)
	if saveAs != "" && value != nil {
		cr.saved[saveAs] = value
		cr.vars[saveAs] = value
		res.SavedAs = saveAs
	}
	if value != nil {
		if saveAs != "" && redact.IsSensitiveKey(saveAs) {
			res.Output = persist(cr.secrets, redact.Mask)
		} else {
			res.Output = persist(cr.secrets, value)
		}
	}
	return err
}

// failStep fills res for a step that failed with err under sctx (its own
// timeout) within ctx (the case's): the case ending meanwhile, the step's
// timeout, or the step's own error; an error of Duet or of what it
// drives is an error, not a failure. It marks an optional MCP call and a
// soft assertion.
func (cr *caseRun) failStep(ctx, sctx context.Context, st *duet.Step, res *duet.StepResult, err error, timeout time.Duration) {
	res.Status = duet.StatusFailed
	switch {
	case ctx.Err() != nil || pastDeadline(ctx):
		// The case (or run) ended while the step ran. A driver that
		// watches the same deadline may return a moment before ctx ends:
		// the deadline having passed is enough.
		if ctx.Err() == nil || errors.Is(context.Cause(ctx), errCaseTimeout) {
			res.ErrorCode, res.ErrorMessage = duet.CodeCaseTimeout, "the case ran out of time during this step"
		} else {
			res.Status, res.ErrorCode, res.ErrorMessage = duet.StatusCancelled, duet.CodeCancelled, "cancelled"
		}
	case errors.Is(context.Cause(sctx), errStepTimeout) || errors.Is(err, context.DeadlineExceeded):
		res.ErrorCode, res.ErrorMessage = duet.CodeStepTimeout, fmt.Sprintf("the step did not finish within %s", timeout)
		if c := duet.ErrorCode(err); c != duet.CodeInternal && c != duet.CodeTimeout && c != duet.CodeCancelled {
			res.ErrorCode, res.ErrorMessage = c, duet.ErrorMessage(err)
		}
	default:
		res.ErrorCode, res.ErrorMessage = duet.ErrorCode(err), duet.ErrorMessage(err)
		if res.ErrorCode == duet.CodeInternal {
			cr.e.log.ErrorContext(ctx, "step failed", "run", cr.run.ID, "step", st.Index, "err", cr.secrets.Scrub(err.Error()))
		}
	}
	switch res.ErrorCode {
	case duet.CodeInternal, duet.CodeUnavailable, duet.CodeBrowserUnavailable, duet.CodeDeviceLost:
		res.Status = duet.StatusError
	}
	if st.MCP != nil && st.MCP.FailurePolicy == duet.FailOptional && res.Status != duet.StatusCancelled {
		res.Optional = true
	}
	if st.Soft && res.Status == duet.StatusFailed && res.ErrorCode != duet.CodeCaseTimeout {
		res.Soft = true
	}
}

// failureShot keeps a screenshot of the page after st failed among res's
// artifacts and returns it (nil when none could be taken). A big mobile
// screenshot on a busy machine takes seconds.
func (cr *caseRun) failureShot(ctx context.Context, st *duet.Step, res *duet.StepResult) []byte {
	shotCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	png, err := cr.session.Screenshot(shotCtx, false)
	var id string
	if err == nil {
		id, err = cr.SaveArtifact(shotCtx, st, "failure", png)
	}
	if err != nil {
		cr.e.log.WarnContext(ctx, "no screenshot of a failed step", "run", cr.run.ID, "execution", cr.x.ID, "step", st.Index, "err", err)
		return png // nil unless only its saving failed
	}
	res.Artifacts = append(res.Artifacts, id)
	return png
}

var errStepTimeout = errors.New("step timeout")

// pastDeadline reports whether ctx has a deadline that has passed.
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// dispatch runs st through the registry entry of its kind.
func (cr *caseRun) dispatch(ctx context.Context, st *duet.Step) (saveAs string, value any, err error) {
	k := step.Lookup(st.Kind)
	if k == nil {
		return "", nil, duet.Errorf(duet.CodeInternal, "step %d has unknown kind %q", st.Index, st.Kind)
	}
	return k.Run(ctx, cr, st)
}
