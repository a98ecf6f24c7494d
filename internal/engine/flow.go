package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// The steps flow steps (if, repeat, forEach, use) run: each runs as the
// case's own steps do (runStep), and its result is kept among the flow
// step's children. While a flow step runs, its result is stored after each
// step it ran (status running, with the iteration it is at): a run in
// progress shows it. A case is suspended (SuspendExecution) only between
// its own steps, never inside a flow step, so what resumes is always a
// whole step: a flow step interrupted in the middle runs again from its
// start, with the case (docs/deployment.md).

// maxChildOutput bounds the output a child result keeps (a loop's many
// iterations must not make one stored result huge).
const maxChildOutput = 4 << 10

// RunSteps implements step.Env.
func (cr *caseRun) RunSteps(ctx context.Context, steps []duet.Step, iteration int) error {
	if len(cr.running) == 0 {
		return duet.Errorf(duet.CodeInternal, "RunSteps outside a flow step")
	}
	parent := cr.running[len(cr.running)-1]
	for i := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		st := &steps[i]
		res := &duet.StepResult{Index: st.Index, Kind: st.Kind, Name: st.Name, Hook: st.Hook, Iteration: iteration}
		cr.runStep(ctx, st, res)
		res.ErrorMessage = cr.secrets.Scrub(res.ErrorMessage)
		cr.addChild(parent, res)
		cr.progress(ctx)
		if res.Status != duet.StatusPassed && !res.Optional {
			where := fmt.Sprintf("step %d (%s)", st.Index+1, st.Name)
			if iteration > 0 {
				where = fmt.Sprintf("iteration %d, %s", iteration, where)
			}
			if res.Status == duet.StatusCancelled && ctx.Err() != nil {
				return ctx.Err()
			}
			return duet.Errorf(res.ErrorCode, "%s: %s", where, res.ErrorMessage)
		}
	}
	return nil
}

// addChild keeps res among parent's children: past duet.MaxChildResults
// kept under the outermost step, a passed result is only counted.
func (cr *caseRun) addChild(parent, res *duet.StepResult) {
	if cr.kept >= duet.MaxChildResults && (res.Status == duet.StatusPassed || res.Status == duet.StatusSkipped) {
		parent.Omitted++
		return
	}
	if len(res.Output) > maxChildOutput {
		res.Output = persist(cr.secrets, fmt.Sprintf("(%d bytes; not kept for a step a flow step ran)", len(res.Output)))
	}
	cr.kept++
	parent.Children = append(parent.Children, res)
}

// FlowState implements step.Env.
func (cr *caseRun) FlowState(branch string, iterations int) {
	if len(cr.running) == 0 {
		return
	}
	r := cr.running[len(cr.running)-1]
	if branch != "" {
		r.Branch = branch
	}
	if iterations > 0 {
		r.Iterations = iterations
	}
}

// progress stores the outermost step's result as it is now (running, with
// the results of the steps it ran so far): what a run in progress shows.
// A write that fails stops the run (runWrites); the next step sees it.
func (cr *caseRun) progress(ctx context.Context) {
	top := cr.running[0]
	snap := *top
	snap.Status = duet.StatusRunning
	if cr.hooks != nil {
		cr.hooks.store(ctx, cr, &snap)
		return
	}
	cr.store(ctx, &snap)
}

// cleanupContext is the context the steps that must run whatever became
// of the case (afterEach, afterAll) run under: the run's cancellation and
// the case's time limit do not end it; what hands the run back does (the
// worker stopping past its grace period, its lease lost, the database
// away: another worker will run them), and so does Options.CleanupTimeout.
func (e *Engine) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), e.opts.CleanupTimeout, errCleanupTimeout)
	hold := holdOf(ctx)
	stop := context.AfterFunc(hold, cancel)
	return c, func() { stop(); cancel() }
}

var errCleanupTimeout = fmt.Errorf("the steps that run after a failure or a cancellation ran out of time")

// holdKey is the context key of the worker's hold on the run (WithHold).
type holdKey struct{}

// WithHold returns ctx carrying hold: a context that ends only when the
// worker no longer holds the run — it is stopping past its grace period,
// it lost its lease, the database is away — and not when the run is
// cancelled at the user's request. The steps that must run after a
// cancellation (afterEach, afterAll) run as long as hold lasts.
func WithHold(ctx, hold context.Context) context.Context {
	return context.WithValue(ctx, holdKey{}, hold)
}

// holdOf returns the hold ctx carries; without one, a context that ends
// when ctx ends handed back (handedBack), not when it is cancelled.
func holdOf(ctx context.Context) context.Context {
	if h, ok := ctx.Value(holdKey{}).(context.Context); ok {
		return h
	}
	h, cancel := context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(ctx, func() {
		if handedBack(ctx) {
			cancel()
		}
	})
	return h
}

// checkSecrets fails a step that reads a secret the executor has not set.
func (cr *caseRun) checkSecrets(st *duet.Step) error {
	for _, name := range st.Secrets {
		if _, ok := cr.secretVals[name]; ok {
			continue
		}
		if cr.secretErr != nil {
			return cr.secretErr
		}
		return duet.Errorf(duet.CodeSecretNotFound, "the step reads secret %s, which %s has not set: set it with `duet vault set %s --as %s` (a secret is the executor's own, never the task's)",
			name, cr.run.TriggeredBy, name, cr.run.TriggeredBy)
	}
	return nil
}

// loadSecrets reads the executor's secrets the steps read (theirs and
// those of the steps they run), once, into the variable secrets; their
// values become the run's secrets, scrubbed from all it keeps.
func (cr *caseRun) loadSecrets(ctx context.Context, steps []duet.Step) {
	names := map[string]bool{}
	duet.WalkSteps(steps, func(st *duet.Step) bool {
		for _, n := range st.Secrets {
			names[n] = true
		}
		return true
	})
	vals := map[string]any{}
	cr.vars["secrets"] = vals
	if len(names) == 0 {
		return
	}
	if cr.e.opts.Secrets == nil {
		cr.secretErr = duet.Errorf(duet.CodeSecretNotFound, "this Duet reads no secrets (no vault): a step that reads ${secrets.NAME} cannot run")
		return
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	got, err := cr.e.opts.Secrets.ReadSecrets(rctx, cr.run.TriggeredBy, list)
	if err != nil {
		cr.secretErr = duet.WrapError(duet.ErrorCode(err), err, "reading %s's secrets: %s", cr.run.TriggeredBy, duet.ErrorMessage(err))
		cr.e.log.ErrorContext(ctx, "reading the executor's secrets", "run", cr.run.ID, "err", err)
		return
	}
	cr.secretVals = got
	for k, v := range got {
		vals[k] = v
		cr.secrets.Add(v)
	}
}

// SecretReader reads the secrets of a run's executor that its steps read
// (internal/secret reads them from the vault).
type SecretReader interface {
	// ReadSecrets returns the values of user's secrets of the names given
	// that exist.
	ReadSecrets(ctx context.Context, user string, names []string) (map[string]string, error)
}

// artifactName is the name of an artifact of the step now running, and
// the index of the case's own step it belongs to: a step a flow step ran
// names its place (s2-i3-s1: step 2 of iteration 3 of step 1's...).
func (cr *caseRun) artifactName(st *duet.Step, name string) (int, string) {
	if len(cr.running) <= 1 {
		return st.Index, name
	}
	var path []string
	for _, r := range cr.running[1:] {
		if r.Iteration > 0 {
			path = append(path, fmt.Sprintf("i%d", r.Iteration))
		}
		path = append(path, fmt.Sprintf("s%d", r.Index+1))
	}
	return cr.running[0].Index, strings.Join(path, "-") + "-" + name
}
