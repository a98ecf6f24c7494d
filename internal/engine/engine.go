// Package engine runs the compiled steps of test cases: HTTP requests,
// assertions, variables, mcpCall steps through the one Invoker, and browser
// steps through a Browser driver. It persists every step's result as it goes,
// and its Worker takes runs from the store's durable queue.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/duet-test/duet"
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
	// the desktop default). Returns BROWSER_UNAVAILABLE when no browser can
	// be started.
	NewSession(ctx context.Context, device string) (BrowserSession, error)
}

// WaitCondition is what a waitFor step waits for.
type WaitCondition = step.WaitCondition

// BrowserSession is one isolated browser context with one page: the page
// the browser steps of one case drive (step.Page), which the engine closes
// when the case ends. Element operations wait up to the context's deadline
// for their element. Errors carry ELEMENT_NOT_FOUND, STEP_TIMEOUT,
// CANCELLED or BROWSER_ERROR. A driver may implement the extension
// interfaces some step kinds declare (step.Hoverer).
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
	// HTTPClient runs http steps; nil means a client without redirects
	// limits beyond the standard library's defaults and without a network
	// guard. The app injects netguard.Policy.Client: each request's
	// context allows the task's base URL host (netguard.AllowURL), and so
	// does the context of Browser.NewSession.
	HTTPClient *http.Client
	// Invoker runs mcpCall steps; nil makes every mcpCall fail with
	// MCP_SERVER_NOT_CONFIGURED.
	Invoker duet.Invoker
	// Browser runs browser steps; nil makes them fail with
	// BROWSER_UNAVAILABLE.
	Browser Browser
	// Artifacts keeps screenshots; nil means screenshots are not kept.
	Artifacts Artifacts
	// StepTimeout bounds a step without its own timeout; 0 means 30s.
	StepTimeout time.Duration
	// CaseTimeout bounds a case without its own timeout; 0 means 10m.
	CaseTimeout time.Duration
	// Parallel is how many cases of one run execute at once; 0 means 1.
	Parallel int
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
	// trace.DefaultMaxBytes) and TraceRecord a recording in the browser.
	// A trace is kept where Artifacts is a TraceSaver.
	Trace         trace.Mode
	TraceMaxBytes int64
	TraceRecord   trace.RecordOptions
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

// New returns an Engine over store.
func New(store duet.Store, opts Options) *Engine {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 30 * time.Second
	}
	if opts.CaseTimeout <= 0 {
		opts.CaseTimeout = 10 * time.Minute
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 1
	}
	if opts.MaxVarBytes <= 0 {
		opts.MaxVarBytes = 64 << 20
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 10 << 20
	}
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

// ErrShutdown is the cancellation cause a worker uses when it stops: the run
// is released for another worker instead of being finished.
var ErrShutdown = errors.New("worker shutting down")

// ErrCancelRequested is the cancellation cause when a user cancelled the run.
var ErrCancelRequested = errors.New("run cancelled")

// Execute runs every unfinished execution of run (up to Options.Parallel at
// once) and returns the run's final state. When ctx is cancelled with cause
// ErrShutdown, it returns that error without finishing anything: the run is
// resumable. With cause ErrCancelRequested, the run ends cancelled.
func (e *Engine) Execute(ctx context.Context, run *duet.Run) error {
	// Everything the run does acts for its executor, in its trace (what
	// outbound requests propagate: docs/operations.md).
	ctx = duet.NewContextWithCaller(ctx, duet.Caller{UserID: run.TriggeredBy, Source: duet.SourceEngine, TraceID: run.TraceID})
	// The run's task and cases are read whatever becomes of ctx: a
	// cancellation that arrives during these reads (just after the claim)
	// is seen by the loop below, and the run ends cancelled with its
	// post-run actions — not in error, nor left running.
	rctx := context.WithoutCancel(ctx)
	task, err := e.store.FindTaskByID(rctx, "", run.TaskID)
	if err != nil {
		return e.finishRun(rctx, run, duet.StatusError, duet.ErrorCode(err), "task not available: "+duet.ErrorMessage(err))
	}
	execs, err := e.store.FindExecutions(rctx, run.ID)
	if err != nil {
		return err
	}
	total := len(execs)
	var todo []*duet.Execution
	done := 0
	for _, x := range execs {
		if x.Status.Final() {
			done++
		} else {
			todo = append(todo, x)
		}
	}
	// The secrets this run comes to know (the executor's credentials,
	// values seen under sensitive keys), scrubbed from everything it keeps.
	secrets := redact.NewSet()
	known := map[string]int{} // execution → secrets it was scrubbed with
	var mu sync.Mutex
	sem := make(chan struct{}, e.opts.Parallel)
	var wg sync.WaitGroup
	for _, x := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			k := e.executeCase(ctx, run, task, x, secrets)
			mu.Lock()
			known[x.ID] = k
			done++
			d := done
			mu.Unlock()
			e.emit(Event{RunID: run.ID, ExecutionID: x.ID, CaseTitle: x.CaseTitle, Status: x.Status, Done: d, Total: total})
		})
	}
	wg.Wait()
	if cause := context.Cause(ctx); ctx.Err() != nil && errors.Is(cause, ErrShutdown) {
		return ErrShutdown
	}
	if ctx.Err() != nil {
		msg := "cancelled"
		if run.CancelRequested || errors.Is(context.Cause(ctx), ErrCancelRequested) {
			msg = "cancelled at the user's request"
		}
		run.PostRun = e.postRun(ctx, run, task, nil, verdict{duet.StatusCancelled, duet.CodeCancelled, msg}, secrets)
		return e.finishRun(context.WithoutCancel(ctx), run, duet.StatusCancelled, duet.CodeCancelled, msg)
	}
	execs, err = e.store.FindExecutions(ctx, run.ID)
	if err != nil {
		return err
	}
	e.rescrubRun(ctx, execs, secrets, known)
	status := duet.StatusPassed
	var code duet.Code
	var msg string
	for _, x := range execs {
		x.ErrorMessage = secrets.Scrub(x.ErrorMessage)
		switch x.Status {
		case duet.StatusError:
			status, code, msg = duet.StatusError, x.ErrorCode, fmt.Sprintf("case %q: %s", x.CaseTitle, x.ErrorMessage)
		case duet.StatusFailed:
			if status == duet.StatusPassed {
				status, code, msg = duet.StatusFailed, x.ErrorCode, fmt.Sprintf("case %q: %s", x.CaseTitle, x.ErrorMessage)
			}
		case duet.StatusCancelled:
			if status == duet.StatusPassed {
				status, code, msg = duet.StatusCancelled, duet.CodeCancelled, "cancelled"
			}
		}
	}
	// The task's post-run actions: notes on the run, never its verdict.
	run.PostRun = e.postRun(ctx, run, task, execs, verdict{status, code, msg}, secrets)
	return e.finishRun(ctx, run, status, code, msg)
}

func (e *Engine) finishRun(ctx context.Context, run *duet.Run, status duet.RunStatus, code duet.Code, msg string) error {
	now := time.Now()
	run.Status, run.ErrorCode, run.ErrorMessage, run.FinishedAt = status, code, msg, &now
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWriteTimeout)
	defer cancel()
	if err := retryUnavailable(ctx, func(ctx context.Context) error { return e.store.FinishRun(ctx, run) }); err != nil {
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
