// Package catalog is Duet's MCP tool catalog, defined once: typed tools with
// input and output schemas, and the governance pipeline every call goes
// through whatever transport it came by (stdio, Streamable HTTP, MCP-Lite):
// identity, size limits, concurrency caps, a per-call timeout, input
// validation, the tool itself, and an audit record. Transports only translate
// wire formats into Catalog.Call. This package imports neither net/http nor
// database/sql.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/duet-test/duet"
)

// Annotations are the MCP tool annotations (hints for clients).
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// Tool is one tool of the catalog.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  *jsonschema.Schema
	OutputSchema *jsonschema.Schema
	Annotations  Annotations

	// Tasks is how the tool supports the Tasks extension (task.go):
	// TaskNever, TaskOptional or TaskRequired.
	Tasks string

	resolve func() (*jsonschema.Resolved, error) // the input schema, resolved at the first call
	quick   func() *quickSchema                  // the quick check of the arguments (args.go), made at the first call; nil: the validator alone
	run     func(ctx context.Context, env *Env, args json.RawMessage) (any, error)
	streams bool // reports progress until its work is done when the client asks (Limits.StreamTimeout)
	asks    bool // may ask its caller for a confirmation (Limits.ConfirmTimeout)
	inputs  bool // may ask its client for input during a call (Env.CanAsk, Env.Ask): WithInput
	// release, when set, says which callers may see and call the tool
	// (a gray release); nil means everyone.
	release func(ctx context.Context, c *Catalog, user string) (bool, error)
}

// Env is what a tool's function sees of the call and of Duet.
type Env struct {
	Caller   duet.Caller
	Store    duet.Store
	Catalog  *Catalog
	Progress func(progress, total float64, message string) // never nil
	// Streaming is true when the client asked for progress (an MCP
	// progress token) and keeps the request open: a long tool may then
	// report progress and answer when its work is done.
	Streaming bool
	// Confirmer asks the person behind the client to confirm an action
	// (see Env.Confirm); nil when the transport cannot ask.
	Confirmer Confirmer
	// Extensions are the protocol extensions the client declared for this
	// call (their identifiers, such as TasksExtension).
	Extensions []string

	input  *Input // nil: the client cannot be asked (see CanAsk, Ask)
	state  []byte // the checked state of the previous round (see State)
	run    string // the run that is the call's task (TrackRun)
	fire   *duet.ScheduleFire
	origin *duet.RunOrigin
}

// Texter is implemented by tool outputs: the text block a person reads.
type Texter interface{ Text() string }

// Define builds a tool from a typed function. The input and output schemas
// come from the In and Out types (field tags `json` and `jsonschema`); adjust
// tweaks them (nil for none).
func Define[In any, Out Texter](name, title, description string, ann Annotations, adjust func(in, out *jsonschema.Schema), fn func(context.Context, *Env, In) (Out, error)) *Tool {
	in, err := jsonschema.For[In](schemaOptions())
	if err != nil {
		panic(fmt.Sprintf("catalog: %s input schema: %v", name, err))
	}
	out, err := jsonschema.For[Out](schemaOptions())
	if err != nil {
		panic(fmt.Sprintf("catalog: %s output schema: %v", name, err))
	}
	portable(in)
	portable(out)
	if adjust != nil {
		adjust(in, out)
	}
	// A failed call's structuredContent is {"error": {code, message}}; the
	// output schema admits it beside the tool's own shape.
	out = withErrorBranch(out)
	// Resolved at the tool's first call, not when the catalog is built (a
	// cold start serves one call); TestInputSchemasResolve resolves them all.
	resolve := sync.OnceValues(func() (*jsonschema.Resolved, error) { return in.Resolve(nil) })
	quick := sync.OnceValue(func() *quickSchema { return compileQuick(in) })
	t := &Tool{Name: name, Title: title, Description: description, InputSchema: in, OutputSchema: out, Annotations: ann, resolve: resolve, quick: quick}
	t.run = func(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
		resolved, err := resolve()
		if err != nil {
			return nil, fmt.Errorf("catalog: %s input schema: %w", name, err)
		}
		var v In
		if err := decodeArgs(in, resolved, quick(), raw, &v); err != nil {
			return nil, err
		}
		return fn(ctx, env, v)
	}
	return t
}

// schemaOptions maps Go types whose JSON shape reflection cannot see:
// json.RawMessage holds any JSON value (reflection would say "array of
// integers", the shape of []byte).
func schemaOptions() *jsonschema.ForOptions {
	ts := map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): anyJSON("any JSON value"),
	}
	maps.Copy(ts, FlowTypeSchemas())
	return &jsonschema.ForOptions{TypeSchemas: ts}
}

// FlowTypeSchemas are the schemas of the types that hold themselves — a
// flow step holds steps, a flow step's result the results of its steps, a
// locator locators —
// where reflection would find a cycle: an object (or a list of objects)
// of the same shape as the step or result that holds it.
func FlowTypeSchemas() map[reflect.Type]*jsonschema.Schema {
	obj := func(doc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "object", Description: doc} }
	// A locator nests locators (within, has): its schema is named, not
	// inferred (docs/suite.schema.json has it in full).
	locator := obj("a locator: css, xpath, role and name, text, label, placeholder, alt, title or testId, with within, has, hasText, nth (docs/suite-format.md, Locators)")
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[duet.Locator]():    locator,
		reflect.TypeFor[*duet.Locator]():   locator,
		reflect.TypeFor[[]*duet.Locator](): {Type: "array", Items: locator},
		reflect.TypeFor[duet.IfStep]():     obj("an if step: its condition (expr, visible or hidden), then and else, lists of steps shaped like this one"),
		reflect.TypeFor[duet.LoopStep]():   obj("a repeat or forEach step: mode, times, cond, in, as, index, max, and steps shaped like this one"),
		reflect.TypeFor[duet.UseStep]():    obj("a use step: the flow, its asset and version, with (the parameters), and its steps shaped like this one"),
		reflect.TypeFor[duet.StepResults](): {Type: "array", Items: obj("a step result shaped like this one"),
			Description: "the results of the steps a flow step ran, in order"},
	}
}

// errorSchema is the shape of structuredContent.error.
func errorSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"code":    {Type: "string", Description: "stable error code, e.g. NOT_FOUND"},
			"message": {Type: "string"},
		},
		Required:             []string{"code", "message"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

func withErrorBranch(s *jsonschema.Schema) *jsonschema.Schema {
	s.Properties["error"] = errorSchema()
	req := s.Required
	s.Required = nil
	s.AnyOf = []*jsonschema.Schema{{Required: req}, {Required: []string{"error"}}}
	return s
}

// decodeArgs decodes a call's arguments into v after checking them
// against the tool's input schema: quick (args.go, nil for a schema beyond
// its subset) passes what is certainly valid, the resolved schema's
// validator decides the rest. Returns INVALID_ARGUMENT.
func decodeArgs(schema *jsonschema.Schema, resolved *jsonschema.Resolved, quick *quickSchema, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "arguments are not valid JSON: %v", err)
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		return duet.Errorf(duet.CodeInvalidArgument, "arguments must be a JSON object")
	}
	// Unknown arguments, named in a stable order (the validator names them
	// in map order: the same call would get different messages).
	if ap := schema.AdditionalProperties; ap != nil && ap.Not != nil {
		var unknown []string
		for k := range obj {
			if _, ok := schema.Properties[k]; !ok {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			return duet.Errorf(duet.CodeInvalidArgument, "invalid arguments: unexpected additional properties %q", unknown)
		}
	}
	if quick == nil || !quick.valid(obj) {
		if err := resolved.Validate(generic); err != nil {
			return duet.Errorf(duet.CodeInvalidArgument, "invalid arguments: %s", strings.TrimPrefix(err.Error(), "validating root: "))
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "invalid arguments: %v", err)
	}
	return nil
}

// Limits bound every call. Zero values mean the documented defaults.
type Limits struct {
	MaxConcurrent  int           // calls in flight, all callers, and apart from them open streams (Op.Stream); 0 means 64
	MaxPerCaller   int           // calls in flight per caller, and apart from them open streams per caller; 0 means 8
	Timeout        time.Duration // per call; 0 means 15s
	MaxArgBytes    int           // size of a call's arguments; 0 means 256 KiB
	MaxResultBytes int           // size of a result; 0 means 4 MiB
	IdempotencyTTL time.Duration // how long start_test_run keys are remembered; 0 means 24h
	MaxQueuedRuns  int           // runs one executor may have queued; 0 means 20
	MaxRetries     int           // a start's retries; 0 means the suite format's bound (10)
	// MaxRunsPerMinute is how many runs one executor may start in a
	// minute, on every instance of the database together; 0 means 60.
	MaxRunsPerMinute int
	// StreamTimeout bounds a call that streams progress to the end of its
	// work (start_test_run with a progress token) in place of Timeout;
	// 0 means 30m.
	StreamTimeout time.Duration
	// ConfirmTimeout bounds a call that asks its caller for a confirmation
	// (stop_test_run with a Confirmer) in place of Timeout: a person
	// answers; 0 means 5m.
	ConfirmTimeout time.Duration
	// InputStateTTL is how long the request state of a multi-round call
	// stays valid (input.go); 0 means 10m.
	InputStateTTL time.Duration
	// TaskTTL is how long a finished task of a tool that went async
	// (Env.Async) stays readable; 0 means 1h. A run's task lives as long
	// as IdempotencyTTL says.
	TaskTTL time.Duration
	// ProgressInterval is the longest a streaming call (start_test_run
	// with a progress token) goes without a progress notification while
	// its run waits or a step runs — what keeps a client's request timeout
	// from firing on a healthy run; 0 means 5s.
	ProgressInterval time.Duration
}

func (l *Limits) defaults() {
	positive(&l.MaxConcurrent, 64)
	positive(&l.MaxPerCaller, 8)
	positive(&l.Timeout, 15*time.Second)
	positive(&l.MaxArgBytes, 256<<10)
	positive(&l.MaxResultBytes, 4<<20)
	positive(&l.IdempotencyTTL, 24*time.Hour)
	positive(&l.MaxQueuedRuns, 20)
	positive(&l.MaxRunsPerMinute, 60)
	positive(&l.StreamTimeout, 30*time.Minute)
	positive(&l.ConfirmTimeout, 5*time.Minute)
	positive(&l.InputStateTTL, 10*time.Minute)
	positive(&l.TaskTTL, time.Hour)
	positive(&l.ProgressInterval, 5*time.Second)
}

// positive sets *v to d unless it is above zero.
func positive[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Auditor receives one record per call. Record must not block for long.
type Auditor interface {
	Record(rec *duet.AuditRecord)
}

// Options configure a Catalog.
type Options struct {
	Limits Limits
	// Auditor receives the audit trail; nil discards it.
	Auditor Auditor
	// RunCreated is called after start_test_run creates a run (to wake a
	// worker); nil means nothing is woken and workers poll.
	RunCreated func(runID string)
	// Review returns what the current version of case c, of task, asks of
	// executor: the steps that need their approval before they call a tool
	// with their credentials, and where the version can send data to (the
	// engine's rule: engine.ReviewCase); nil means nothing needs an
	// approval, and start_test_run asks for none (approve.go).
	Review func(ctx context.Context, executor string, task *duet.Task, c *duet.Case) (*CaseReview, error)
	// ValidDevice checks device preset names; nil accepts any.
	ValidDevice func(string) error
	// StopTool releases stop_test_run; the zero value releases it to
	// nobody.
	StopTool StopToolOptions
	// Extra tools mounted beside the product catalog (test fixtures).
	Extra []*Tool
	// StateKey returns the key that seals the request state of
	// multi-round calls (input.go), asked once, at the first use: every
	// instance that may answer the next round must have the same one (Duet
	// derives it from the master key). nil, or an error (logged), means a
	// random key of this process: a second round that reaches another
	// instance, or follows a restart, is refused and the client starts over.
	StateKey func() ([]byte, error)
	// Observe, if set, wraps every governed operation that runs (after
	// admission, around the tool or method): it returns the context the
	// operation runs in (a trace span) and a function called with its
	// outcome. nil observes nothing.
	Observe func(ctx context.Context, op Op) (context.Context, func(error))
	Logger  *slog.Logger
	Now     func() time.Time
}

// Catalog is the set of tools and the governance pipeline.
type Catalog struct {
	store  duet.Store
	opts   Options
	tools  []*Tool
	byName map[string]*Tool
	log    *slog.Logger

	global chan struct{}
	mu     sync.Mutex
	per    map[string]int
	// The open streams (Op.Stream), counted apart from the calls: in all
	// and per caller, under mu.
	streams    int
	streamsPer map[string]int

	sealer *sealer
	tasks  tasks
	// stopTeams holds the ids of the teams stop_test_run is released to,
	// bound by BindStopRelease (nil: none yet).
	stopTeams atomic.Pointer[map[string]bool]
}

// New returns the catalog over store.
func New(store duet.Store, opts Options) *Catalog {
	opts.Limits.defaults()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Catalog{store: store, opts: opts, byName: map[string]*Tool{}, log: opts.Logger,
		global: make(chan struct{}, opts.Limits.MaxConcurrent), per: map[string]int{}, streamsPer: map[string]int{}}
	c.sealer = newSealer(opts.StateKey, opts.Limits.InputStateTTL, opts.Now, opts.Logger)
	c.tasks.m = map[string]*memTask{}
	for _, t := range append(productTools(), opts.Extra...) {
		c.tools = append(c.tools, t)
		c.byName[t.Name] = t
	}
	return c
}

// Tools returns the tools in catalog order.
func (c *Catalog) Tools() []*Tool { return c.tools }

// Asks reports whether the tool may ask its caller anything during a
// call: a confirmation, or input (WithInput). Only such a tool is told what
// its client can answer: a transport that cannot carry a question may
// answer the calls of every other tool itself (the fast paths).
func (t *Tool) Asks() bool { return t.asks || t.inputs }

// WithInput declares that t may ask its client for input in the middle of
// a call (Env.CanAsk, Env.Ask) — or answer otherwise depending on what the
// client can be asked. Call hands the client's Input only to a tool that
// declared it: for any other, CanAsk is false and Ask is UNAVAILABLE on
// every transport, so whether a call may need an input round is known
// before it runs.
func (t *Tool) WithInput() *Tool {
	t.inputs = true
	return t
}

// Streams reports whether the tool reports progress until its work is done
// when the client asks for progress.
func (t *Tool) Streams() bool { return t.streams }

// Tool returns a tool by name.
func (c *Catalog) Tool(name string) (*Tool, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Limits returns the limits in force.
func (c *Catalog) Limits() Limits { return c.opts.Limits }

// Request is one tool call.
type Request struct {
	Caller   duet.Caller
	Tool     string
	Args     json.RawMessage
	Progress func(progress, total float64, message string) // may be nil
	// Confirmer asks the caller to confirm an action (an MCP elicitation);
	// nil when the transport cannot ask.
	Confirmer Confirmer
	// Input lets the tool ask the client for input during the call, and
	// carries the client's answers (input.go); nil means it cannot.
	Input *Input
	// Extensions are the protocol extensions the client declared.
	Extensions []string
	// Fire, set only by the scheduler in this process (never from a
	// wire), makes the start_test_run call a schedule's slot: the store
	// claims it in the transaction that creates the run.
	Fire *duet.ScheduleFire
	// Origin, set by in-process callers (the CLI, REST), is the CI job a
	// start_test_run call comes from, kept on the run.
	Origin *duet.RunOrigin
	// Slot is the concurrency slot the transport took for this call with
	// Admit (HTTP doors admit before they read the request, to answer a
	// refusal their own way); nil: Call takes one (Op.Slot).
	Slot *Slot
}

// Result is the outcome of a call in transport-neutral form: a text block, the
// structured content (matching the tool's output schema) and whether it is an
// error. Code is OutcomeOK or the error code.
type Result struct {
	Text       string
	Structured json.RawMessage
	IsError    bool
	Code       duet.Code
	// InputRequests, when not empty, make the result an input-required
	// one: the questions for the client, and RequestState, the sealed
	// state it must send back with its answers (input.go). Text and
	// Structured are then empty.
	InputRequests map[string]InputRequest
	RequestState  string
	// Task, when set, makes the result a created task (task.go): the
	// call's work goes on, and tasks/get follows it.
	Task *MCPTask
}

// ErrUnknownTool is returned by Call for a tool the catalog does not have:
// transports turn it into a protocol error.
var ErrUnknownTool = errors.New("unknown tool")

// Call runs a tool through the governance pipeline (Govern). Domain failures
// come back as a Result with IsError and a code. The errors, which
// transports report as protocol errors, are ErrUnknownTool and ErrBadState
// (wrapped), and a CAPABILITY_REQUIRED *CapabilityError. Every call,
// including a refused one, leaves one audit record.
func (c *Catalog) Call(ctx context.Context, req Request) (*Result, error) {
	if req.Caller.TraceID == "" {
		req.Caller.TraceID = duet.NewTraceID()
	}
	op := Op{Caller: req.Caller, Method: "tools/call", Name: req.Tool, ArgBytes: len(req.Args), Slot: req.Slot}
	t, ok := c.byName[req.Tool]
	if !ok {
		c.Refuse(op, duet.Errorf(duet.CodeNotFound, "unknown tool %q", req.Tool))
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, req.Tool)
	}
	if t.Tasks == TaskRequired && !slices.Contains(req.Extensions, TasksExtension) {
		return nil, c.Refuse(op, &CapabilityError{Message: fmt.Sprintf("tool %s runs only as a task: declare the %s extension", t.Name, TasksExtension),
			Required: map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	}
	var state []byte
	if req.Input != nil && req.Input.State != "" {
		var err error
		state, err = c.sealer.open(req.Input.State, req.Caller.UserID, t.Name, canonicalArgs(req.Args))
		if err != nil {
			return nil, c.Refuse(op, err)
		}
	}
	progress := req.Progress
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	// A tool that streams (start_test_run) works to the end of its work
	// when the client asked for progress: the stream timeout bounds it.
	streaming := req.Progress != nil && t.streams
	if streaming {
		op.Timeout = c.opts.Limits.StreamTimeout
	}
	if req.Confirmer != nil && t.asks {
		op.Timeout = max(op.Timeout, c.opts.Limits.ConfirmTimeout)
	}
	var res *Result
	var protoErr error
	err := c.Govern(ctx, op, func(ctx context.Context) (int, error) {
		if err := c.checkReleased(ctx, t, req.Caller.UserID); err != nil {
			return 0, err
		}
		input := req.Input
		if !t.Asks() {
			input = nil // it declared it never asks (WithInput): nothing to tell it
		}
		env := &Env{Caller: req.Caller, Store: c.store, Catalog: c, Progress: progress, Streaming: streaming, Confirmer: req.Confirmer,
			Extensions: req.Extensions, input: input, state: state, fire: req.Fire, origin: req.Origin}
		out, err := t.run(ctx, env, req.Args)
		var async *asyncWork
		if errors.As(err, &async) {
			if env.TasksDeclared() && t.Tasks != TaskNever {
				res = &Result{Task: c.startTask(req, t, async.work), Code: duet.OutcomeOK}
				return 0, nil
			}
			out, err = async.work(ctx, env) // no task: the work is the call's
		}
		var ask *inputRequired
		if errors.As(err, &ask) {
			sealed, err := c.sealer.seal(req.Caller.UserID, t.Name, canonicalArgs(req.Args), ask.state)
			if err != nil {
				return 0, err
			}
			res = &Result{InputRequests: ask.requests, RequestState: sealed, Code: duet.OutcomeOK}
			return len(sealed), nil
		}
		var capErr *CapabilityError
		if errors.As(err, &capErr) {
			protoErr = capErr
			return 0, capErr
		}
		if err == nil && (out == nil || reflect.ValueOf(out).Kind() == reflect.Pointer && reflect.ValueOf(out).IsNil()) {
			err = fmt.Errorf("tool %s returned nothing", t.Name)
		}
		if err != nil {
			return 0, err
		}
		structured, err := json.Marshal(out)
		if err != nil {
			return 0, fmt.Errorf("encoding the result of %s: %w", t.Name, err)
		}
		text := out.(Texter).Text()
		res = &Result{Text: text, Structured: structured, Code: duet.OutcomeOK}
		if env.run != "" {
			// The call's work goes on in a run: the run is the task.
			v, err := c.runTaskView(ctx, req.Caller, env.run)
			if err != nil {
				return 0, err
			}
			res = &Result{Task: v, Code: duet.OutcomeOK}
		}
		return len(structured) + len(text), nil
	})
	if protoErr != nil {
		return nil, protoErr
	}
	if err != nil {
		return errorResult(err), nil
	}
	return res, nil
}

// CapabilityError is returned by a tool, and by Call, when the call needs a
// client capability the client did not declare (CAPABILITY_REQUIRED: a
// protocol error, JSON-RPC -32021). Required names it in the shape of the
// client's capabilities ({"extensions": {"io.modelcontextprotocol/tasks": {}}}).
type CapabilityError struct {
	Message  string
	Required map[string]any
}

func (e *CapabilityError) Error() string {
	return string(duet.CodeCapabilityRequired) + ": " + e.Message
}

// Unwrap gives the error its code.
func (e *CapabilityError) Unwrap() error {
	return &duet.Error{Code: duet.CodeCapabilityRequired, Message: e.Message}
}

// Audit records a call that did not go through Call or Govern (CLI
// actions). Refusals go through Refuse.
func (c *Catalog) Audit(rec *duet.AuditRecord) {
	if c.opts.Auditor != nil {
		c.opts.Auditor.Record(rec)
	}
}

// Op is one governed operation, whichever door it came through: a tool
// call, any other MCP method (resources/read, prompts/get, tools/list,
// initialize, ...), or an HTTP request stopped at the door.
type Op struct {
	Caller duet.Caller
	// Method is the MCP method ("tools/call", "resources/read", ...) or,
	// for a request refused before it was read, "http POST /mcp/http".
	Method string
	// Name is what the method acts on: a tool or prompt name, a resource
	// URI (audited as the record's tool).
	Name string
	// ArgBytes is the size of the arguments or parameters.
	ArgBytes int
	// Stream marks a long-lived stream that ends when the client ends it
	// (subscriptions/listen, a run's progress followed over REST): it takes
	// a stream slot instead of a call slot — streams are counted apart from
	// calls, under the same limits (Limits.MaxConcurrent in all,
	// Limits.MaxPerCaller per caller) — and has no time or size limit; it
	// is audited when it ends.
	Stream bool
	// Timeout replaces Limits.Timeout for this operation (0 keeps it): a
	// call that streams progress to the end of its work.
	Timeout time.Duration
	// Slot is the concurrency slot taken for this operation with Admit, by
	// a transport that admits before it reads the request (nil: Govern
	// takes one). Its holder releases it.
	Slot *Slot
}

// Slot is a concurrency slot taken with Admit. Given to Govern (Op.Slot)
// or Call (Request.Slot) for the operation it was taken for, it spares
// them taking another; Release gives it back (once; more calls do
// nothing).
type Slot struct{ release func() }

// Release gives the slot back. A nil Slot releases nothing.
func (s *Slot) Release() {
	if s != nil && s.release != nil {
		s.release()
	}
}

// held reports whether s is a slot Admit took (a Slot made elsewhere holds
// nothing).
func (s *Slot) held() bool { return s != nil && s.release != nil }

// The pipeline, as the audit trail and the errors name its steps:
//
//	Admit:  identity → concurrency caps (global, per caller)
//	Govern: identity → argument size → Admit (unless Op.Slot holds one) →
//	        per-call timeout → fn → result size → one audit record
//
// A refusal at any step is audited once, with the code the error carries.

// Admit checks op's caller and takes a concurrency slot (a global one and
// one of the caller's) without waiting — a stream slot for a stream
// (Op.Stream), a call slot otherwise — and returns it: given to Govern
// (Op.Slot) or Call (Request.Slot) for the same operation, they do not
// take another; its holder releases it. A refusal (UNAUTHENTICATED,
// INSUFFICIENT_SCOPE, RATE_LIMITED) is audited and returned. Transports
// that answer a refusal in their own way (HTTP 429 with Retry-After) admit
// before translating the request.
func (c *Catalog) Admit(op Op) (*Slot, error) {
	if err := checkCaller(op.Caller); err != nil {
		return nil, c.Refuse(op, err)
	}
	if err := c.checkAccess(op); err != nil {
		return nil, c.Refuse(op, err)
	}
	acquire := c.Acquire
	if op.Stream {
		acquire = c.acquireStream
	}
	release, err := acquire(op.Caller.UserID)
	if err != nil {
		return nil, c.Refuse(op, err)
	}
	return &Slot{release: release}, nil
}

// Govern runs fn as op through the governance pipeline: identity, argument
// size, concurrency caps (unless op.Slot holds a slot taken with Admit),
// a per-call timeout, fn itself, the result-size cap and an audit record
// (outcome, duration, sizes; never values). The first change fn stores
// writes that record in its own transaction (duet.AuditIntent in fn's
// context), so a crash cannot keep the change and lose its record; the
// record's outcome, duration and result size are completed when fn ends. fn returns the size in bytes of
// the result it built; ResultBudget(ctx) tells it the cap before it builds
// one. Govern returns fn's error (a missed deadline becomes TIMEOUT, a panic
// INTERNAL), a refusal (UNAUTHENTICATED, TOO_LARGE, RATE_LIMITED), or
// TOO_LARGE for a result over the cap — the caller must then not send it.
func (c *Catalog) Govern(ctx context.Context, op Op, fn func(ctx context.Context) (int, error)) error {
	start := c.opts.Now()
	if op.Caller.TraceID == "" {
		op.Caller.TraceID = duet.NewTraceID()
	}
	if err := checkCaller(op.Caller); err != nil {
		return c.Refuse(op, err)
	}
	if op.ArgBytes > c.opts.Limits.MaxArgBytes {
		return c.Refuse(op, duet.Errorf(duet.CodeTooLarge, "arguments are %d bytes; the limit is %d", op.ArgBytes, c.opts.Limits.MaxArgBytes))
	}
	if !op.Slot.held() {
		slot, err := c.Admit(op)
		if err != nil {
			return err
		}
		defer slot.Release()
	}
	timeout := c.opts.Limits.Timeout
	if op.Timeout > 0 {
		timeout = op.Timeout
	}
	if !op.Stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
		ctx = context.WithValue(ctx, budgetKey{}, c.opts.Limits.MaxResultBytes)
	}
	end := func(error) {}
	if c.opts.Observe != nil {
		ctx, end = c.opts.Observe(ctx, op)
	}
	// A change the call makes is stored with the call's audit record, in
	// one transaction (duet.AuditIntent); the record is completed below.
	intent := duet.NewAuditIntent(duet.AuditRecord{Time: start, TraceID: op.Caller.TraceID, CallSource: op.Caller.Source, Caller: op.Caller.UserID,
		Method: op.Method, Tool: op.Name, ArgBytes: op.ArgBytes})
	ctx = duet.WithAuditIntent(ctx, intent)
	size, err := runSafely(ctx, fn)
	if err != nil && !op.Stream && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = duet.WrapError(duet.CodeTimeout, err, "the call did not finish within %s", timeout)
	}
	if err == nil && !op.Stream && size > c.opts.Limits.MaxResultBytes {
		err = duet.Errorf(duet.CodeTooLarge, "the result is %d bytes; the limit is %d (ask for less: a smaller page, a narrower query)", size, c.opts.Limits.MaxResultBytes)
	}
	end(err)
	outcome := duet.OutcomeOK
	if err != nil {
		outcome = duet.ErrorCode(err)
		if outcome == duet.CodeInternal {
			c.log.ErrorContext(ctx, "call failed", "method", op.Method, "name", op.Name, "traceId", op.Caller.TraceID, "err", err)
		}
	}
	c.Audit(&duet.AuditRecord{ // op.Caller passed checkCaller
		ID:   intent.Close(), // the record a change stored, completed; else a new one
		Time: start, TraceID: op.Caller.TraceID, CallSource: op.Caller.Source, Caller: op.Caller.UserID,
		Method: op.Method, Tool: op.Name, Outcome: outcome, ArgBytes: op.ArgBytes, ResultBytes: size,
		DurationUs: c.opts.Now().Sub(start).Microseconds(),
	})
	return err
}

// Refuse records op as refused with err — a request stopped before or
// instead of running: no credentials, a body over the limit, a malformed
// request, an unknown session — and returns err, for the transport to
// translate. It is the one place refusals are audited.
func (c *Catalog) Refuse(op Op, err error) error {
	if op.Caller.TraceID == "" {
		op.Caller.TraceID = duet.NewTraceID()
	}
	if duet.ValidUserID(op.Caller.UserID) != nil {
		op.Caller.UserID = "" // an invalid id is not written anywhere
	}
	c.Audit(&duet.AuditRecord{
		Time: c.opts.Now(), TraceID: op.Caller.TraceID, CallSource: op.Caller.Source, Caller: op.Caller.UserID,
		Method: op.Method, Tool: op.Name, Outcome: duet.ErrorCode(err), ArgBytes: op.ArgBytes,
	})
	return err
}

// checkCaller is the identity step: a caller with a valid user id (the
// transports established it; the rule is duet.ValidUserID).
func checkCaller(c duet.Caller) error {
	if c.UserID == "" {
		return duet.Errorf(duet.CodeUnauthenticated, "no caller identity")
	}
	if err := duet.ValidUserID(c.UserID); err != nil {
		return duet.Errorf(duet.CodeUnauthenticated, "invalid caller identity: %s", duet.ErrorMessage(err))
	}
	return nil
}

// checkAccess is the scope step: an OAuth caller's token must allow what
// op does. Calling a tool that is not read-only (start_test_run, cancelling
// a run) needs the run scope; reading anything else — read-only tools,
// resources, prompts — needs the read scope; discovery (initialize, lists,
// ping) needs either. Callers without scopes (gateway key, personal token,
// stdio, CLI) pass. Returns INSUFFICIENT_SCOPE.
func (c *Catalog) checkAccess(op Op) error {
	a := op.Caller.Access
	if !a.Scoped {
		return nil
	}
	switch op.Method {
	case "tools/call":
		run := true
		if t, ok := c.byName[op.Name]; ok && t.Annotations.ReadOnly {
			run = false
		}
		if !a.Allows(run) {
			if run {
				return duet.Errorf(duet.CodeInsufficientScope, "%s starts or changes runs: the access token needs the run scope", op.Name)
			}
			return duet.Errorf(duet.CodeInsufficientScope, "%s reads data: the access token needs the read scope", op.Name)
		}
	case "resources/read", "prompts/get", "resources/subscribe", "subscriptions/listen", "completion/complete":
		if !a.Read {
			return duet.Errorf(duet.CodeInsufficientScope, "%s reads data: the access token needs the read scope", op.Method)
		}
	default:
		if !a.Read && !a.Run {
			return duet.Errorf(duet.CodeInsufficientScope, "the access token carries none of Duet's scopes")
		}
	}
	return nil
}

// runSafely runs fn, turning a panic into an internal error.
func runSafely(ctx context.Context, fn func(context.Context) (int, error)) (size int, err error) {
	defer func() {
		if r := recover(); r != nil {
			size, err = 0, fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx)
}

type budgetKey struct{}

// ResultBudget returns the largest result, in bytes, that the call running
// in ctx may return (0 outside Govern): a handler that builds a large result
// checks it before building.
func ResultBudget(ctx context.Context) int {
	n, _ := ctx.Value(budgetKey{}).(int)
	return n
}

// Acquire takes a global and a per-caller slot without waiting, and returns
// the function that gives them back. Returns RATE_LIMITED. Prefer Admit,
// which also audits a refusal.
func (c *Catalog) Acquire(user string) (func(), error) {
	select {
	case c.global <- struct{}{}:
	default:
		return nil, duet.Errorf(duet.CodeRateLimited, "the server is at its limit of %d concurrent calls; retry shortly", c.opts.Limits.MaxConcurrent)
	}
	c.mu.Lock()
	if c.per[user] >= c.opts.Limits.MaxPerCaller {
		c.mu.Unlock()
		<-c.global
		return nil, duet.Errorf(duet.CodeRateLimited, "%s has %d calls in flight, the per-caller limit; retry shortly", user, c.opts.Limits.MaxPerCaller)
	}
	c.per[user]++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.per[user]--; c.per[user] == 0 {
				delete(c.per, user)
			}
			c.mu.Unlock()
			<-c.global
		})
	}, nil
}

// acquireStream takes a stream slot of user's: at most Limits.MaxConcurrent
// streams open in all and Limits.MaxPerCaller per caller, counted apart from
// the calls. Returns RATE_LIMITED.
func (c *Catalog) acquireStream(user string) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams >= c.opts.Limits.MaxConcurrent {
		return nil, duet.Errorf(duet.CodeRateLimited, "the server has %d streams open, its limit (DUET_MAX_CONCURRENT); close one or retry shortly", c.opts.Limits.MaxConcurrent)
	}
	if c.streamsPer[user] >= c.opts.Limits.MaxPerCaller {
		return nil, duet.Errorf(duet.CodeRateLimited, "%s has %d streams open (subscriptions, run progress), the per-caller limit (DUET_MAX_PER_CALLER); close one or retry shortly", user, c.opts.Limits.MaxPerCaller)
	}
	c.streams++
	c.streamsPer[user]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.streams--
			if c.streamsPer[user]--; c.streamsPer[user] <= 0 {
				delete(c.streamsPer, user)
			}
		})
	}, nil
}

// ErrorResult is the Result of a call refused with err (for transports that
// refuse calls before they reach Call).
func ErrorResult(err error) *Result { return errorResult(err) }

// ErrorBody is structuredContent.error of a failed call.
type ErrorBody struct {
	Code    duet.Code `json:"code"`
	Message string    `json:"message"`
}

func errorResult(err error) *Result {
	code, msg := duet.ErrorCode(err), duet.ErrorMessage(err)
	b, _ := json.Marshal(struct {
		Error ErrorBody `json:"error"`
	}{ErrorBody{code, msg}})
	return &Result{Text: string(code) + ": " + msg, Structured: b, IsError: true, Code: code}
}
