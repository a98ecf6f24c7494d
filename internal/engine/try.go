package engine

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
)

// Tryout is some steps of a case tried on a live page, outside any run:
// the console's "Try this step" (internal/recorder). The steps run as a
// run's do — each through runStep under its timeout, the case's under
// the case timeout, with the executor's secrets and own credentials (an
// mcpCall through the one Invoker, callSource web), the network guard
// allowing the task's base URL — but nothing is kept: no run, no step
// results, no artifacts, no baselines; and the page is the live
// session's, which the tryout leaves open.
type Tryout struct {
	Executor    string
	Task        *duet.Task
	Environment string      // the task's environment ("" its default)
	Steps       []duet.Step // the case's steps, compiled (its hooks included)
	// From and To are the case's own steps to run (1 the first, hooks
	// not counted), To included.
	From, To int
	// Page is the live page; Try never closes it.
	Page BrowserSession
	// State is what the earlier tryouts of the session saved (nil: none);
	// Try adds what these steps save.
	State *TryState
}

// TryState is what the tryouts on one live page saved: the variables a
// later tryout's steps read, the secrets learnt (scrubbed from what a
// later tryout shows), and the browser sessions its saveSession steps
// saved, for its session steps — held in memory with the live page and
// dropped with it, never stored.
type TryState struct {
	mu       sync.Mutex
	saved    map[string]any
	secrets  *redact.Set
	sessions map[string][]byte
}

// NewTryState returns an empty TryState.
func NewTryState() *TryState {
	return &TryState{saved: map[string]any{}, secrets: redact.NewSet(), sessions: map[string][]byte{}}
}

// trySessions keeps a tryout's browser sessions in its TryState (Try holds
// its lock): a session saved by one tryout of the live page is there for
// the next, as a run's is for its later cases.
type trySessions struct{ st *TryState }

func (k trySessions) SaveSession(_ context.Context, _, _, name string, state []byte) error {
	k.st.sessions[name] = slices.Clone(state)
	return nil
}

func (k trySessions) LoadSession(_ context.Context, _, _, name string) ([]byte, error) {
	state, ok := k.st.sessions[name]
	if !ok {
		// Not NOT_FOUND: a tryout does not wait for another case to save it.
		return nil, duet.Errorf(duet.CodeSessionNotFound, "no tryout on this live page saved the session %s: try its saveSession step first", name)
	}
	return slices.Clone(state), nil
}

// TryResult is what a tryout did.
type TryResult struct {
	Status  duet.RunStatus     `json:"status"` // passed, or the first failure's
	Results []*duet.StepResult `json:"results"`
	// Vars are the variables the tryouts of the page have saved, as a
	// run keeps them (redacted).
	Vars map[string]any `json:"vars"`
	// Screenshot is a PNG of the page after the steps (nil when it could
	// not be taken).
	Screenshot []byte `json:"-"`
}

// MaxTrySteps bounds the steps of one tryout.
const MaxTrySteps = 100

// Try runs the steps From..To of t.Steps on t.Page as a run would and
// returns their results. A step that fails stops the tryout (as it stops
// a case); the steps after it are not run. Returns INVALID_ARGUMENT for a
// range outside the case's steps or longer than MaxTrySteps; the steps'
// own failures are results, not errors.
func (e *Engine) Try(ctx context.Context, t Tryout) (*TryResult, error) {
	var own []int // the case's own steps' places in t.Steps
	for i := range t.Steps {
		if t.Steps[i].Hook == "" {
			own = append(own, i)
		}
	}
	if t.To == 0 {
		t.To = t.From
	}
	switch {
	case t.From < 1 || t.To < t.From || t.To > len(own):
		return nil, duet.Errorf(duet.CodeInvalidArgument, "steps %d to %d are not steps of the case, which has %d", t.From, t.To, len(own))
	case t.To-t.From+1 > MaxTrySteps:
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a tryout runs at most %d steps", MaxTrySteps)
	case t.Page == nil || t.Task == nil:
		return nil, duet.Errorf(duet.CodeInternal, "a tryout needs a task and a page")
	}
	st := t.State
	if st == nil {
		st = NewTryState()
	}
	st.mu.Lock() // one tryout of a page at a time
	defer st.mu.Unlock()

	opts := e.opts
	opts.Artifacts, opts.Sessions, opts.OnEvent = nil, trySessions{st}, nil
	te := &Engine{store: tryStore{e.store}, opts: opts, log: e.log, tools: e.tools, approver: e.approver}
	run := &duet.Run{TaskID: t.Task.ID, TriggeredBy: t.Executor, CallSource: duet.SourceWeb, Environment: t.Environment}
	rs, err := newRunScope(run, t.Task, st.secrets)
	if err != nil {
		return nil, err
	}
	x := &duet.Execution{RunID: run.ID, Steps: t.Steps, Attempt: 1, Status: duet.StatusPassed}
	cr := &caseRun{e: te, run: run, task: rs.task, x: x, saved: map[string]any{}, secrets: st.secrets, vars: rs.builtins(), aiTokens: &rs.aiTokens, aiTime: &rs.aiTime,
		session: t.Page, tryout: true,
		// The steps are the tester's own writing, run with their own
		// credentials: nobody else's approval is asked.
		authorKnown: true, authorName: t.Executor,
		w: &runWrites{store: te.store, wait: opts.WriteWait, stop: func(error) {}}}
	for k, v := range st.saved {
		if cr.keep(k, v) == nil {
			cr.saved[k], cr.vars[k] = v, v
		}
	}
	picked := make([]duet.Step, 0, t.To-t.From+1)
	for _, i := range own[t.From-1 : t.To] {
		picked = append(picked, t.Steps[i])
	}
	cr.loadSecrets(ctx, picked)
	defer cr.endHTTP() // the page stays open for the next tryout
	cctx, cancel := context.WithTimeoutCause(ctx, opts.CaseTimeout, errCaseTimeout)
	defer cancel()
	out := &TryResult{Status: duet.StatusPassed, Results: []*duet.StepResult{}}
	for i := range picked {
		s := &picked[i]
		res := &duet.StepResult{Index: s.Index, Kind: s.Kind, Name: s.Name, Status: duet.StatusSkipped}
		if out.Status == duet.StatusPassed && cctx.Err() == nil {
			cr.runStep(cctx, s, res)
		}
		res.ErrorMessage = cr.secrets.Scrub(res.ErrorMessage)
		out.Results = append(out.Results, res)
		if out.Status == duet.StatusPassed && res.Status != duet.StatusPassed && res.Status != duet.StatusSkipped && !res.Optional && !res.Soft {
			out.Status = res.Status
		}
	}
	st.saved = maps.Clone(cr.saved)
	out.Vars = cr.persistVars()
	shotCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer stop()
	if png, err := t.Page.Screenshot(shotCtx, false); err == nil {
		out.Screenshot = png
	} else {
		e.log.WarnContext(ctx, "no screenshot after a tryout", "executor", t.Executor, "err", duet.ErrorMessage(err))
	}
	return out, nil
}

// tryStore is the store a tryout's steps see: it reads what a run reads,
// and keeps none of what a run writes (a step's results, its progress, an
// AI plan, a healed draft); a new screenshot baseline is refused, since a
// baseline is a run's evidence.
type tryStore struct{ duet.Store }

func (tryStore) SaveStepResult(context.Context, duet.Lease, string, *duet.StepResult, map[string]any) error {
	return nil
}

func (tryStore) SaveRunHooks(context.Context, duet.Lease, []*duet.StepResult, map[string]any) error {
	return nil
}

func (tryStore) SaveAIPlan(context.Context, duet.Lease, *duet.AIPlan) error { return nil }

func (tryStore) UseAIPlan(context.Context, duet.Lease, string) error { return nil }

func (tryStore) SaveDraftCase(context.Context, *duet.Case) error { return nil }

func (tryStore) CreateBaseline(context.Context, duet.Lease, *duet.Baseline) error {
	return duet.Errorf(duet.CodeInvalidArgument, "a tryout keeps no screenshot baselines: run the case to make one")
}

// invokeSource is the callSource of a step's MCP call: the engine's in a
// run, the console's in a tryout.
func (cr *caseRun) invokeSource() duet.CallSource {
	if cr.tryout {
		return duet.SourceWeb
	}
	return duet.SourceEngine
}
