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
	"reflect"
	"strings"
	"sync"
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

	input   *jsonschema.Resolved
	run     func(ctx context.Context, env *Env, args json.RawMessage) (any, error)
	streams bool // reports progress until its work is done when the client asks (Limits.StreamTimeout)
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
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("catalog: %s input schema: %v", name, err))
	}
	t := &Tool{Name: name, Title: title, Description: description, InputSchema: in, OutputSchema: out, Annotations: ann, input: resolved}
	t.run = func(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
		var v In
		if err := decodeArgs(resolved, raw, &v); err != nil {
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
	return &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): anyJSON("any JSON value"),
	}}
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

func decodeArgs(resolved *jsonschema.Resolved, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "arguments are not valid JSON: %v", err)
	}
	if _, ok := generic.(map[string]any); !ok {
		return duet.Errorf(duet.CodeInvalidArgument, "arguments must be a JSON object")
	}
	if err := resolved.Validate(generic); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "invalid arguments: %s", strings.TrimPrefix(err.Error(), "validating root: "))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "invalid arguments: %v", err)
	}
	return nil
}

// Limits bound every call. Zero values mean the documented defaults.
type Limits struct {
	MaxConcurrent  int           // calls in flight, all callers; 0 means 64
	MaxPerCaller   int           // calls in flight per caller; 0 means 8
	Timeout        time.Duration // per call; 0 means 15s
	MaxArgBytes    int           // size of a call's arguments; 0 means 256 KiB
	MaxResultBytes int           // size of a result; 0 means 4 MiB
	IdempotencyTTL time.Duration // how long start_test_run keys are remembered; 0 means 24h
	// StreamTimeout bounds a call that streams progress to the end of its
	// work (start_test_run with a progress token) in place of Timeout;
	// 0 means 30m.
	StreamTimeout time.Duration
}

func (l *Limits) defaults() {
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = 64
	}
	if l.MaxPerCaller <= 0 {
		l.MaxPerCaller = 8
	}
	if l.Timeout <= 0 {
		l.Timeout = 15 * time.Second
	}
	if l.MaxArgBytes <= 0 {
		l.MaxArgBytes = 256 << 10
	}
	if l.MaxResultBytes <= 0 {
		l.MaxResultBytes = 4 << 20
	}
	if l.IdempotencyTTL <= 0 {
		l.IdempotencyTTL = 24 * time.Hour
	}
	if l.StreamTimeout <= 0 {
		l.StreamTimeout = 30 * time.Minute
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
	// ValidDevice checks device preset names; nil accepts any.
	ValidDevice func(string) error
	// Extra tools mounted beside the product catalog (test fixtures).
	Extra  []*Tool
	Logger *slog.Logger
	Now    func() time.Time
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
		global: make(chan struct{}, opts.Limits.MaxConcurrent), per: map[string]int{}}
	for _, t := range append(productTools(), opts.Extra...) {
		c.tools = append(c.tools, t)
		c.byName[t.Name] = t
	}
	return c
}

// Tools returns the tools in catalog order.
func (c *Catalog) Tools() []*Tool { return c.tools }

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
}

// Result is the outcome of a call in transport-neutral form: a text block, the
// structured content (matching the tool's output schema) and whether it is an
// error. Code is OutcomeOK or the error code.
type Result struct {
	Text       string
	Structured json.RawMessage
	IsError    bool
	Code       duet.Code
}

// ErrUnknownTool is returned by Call for a tool the catalog does not have:
// transports turn it into a protocol error.
var ErrUnknownTool = errors.New("unknown tool")

// Call runs the governance pipeline and the tool. Domain failures come back
// as a Result with IsError and a code; the only error is ErrUnknownTool
// (wrapped), which transports report as a protocol error. Every call,
// including a refused one, leaves an audit record.
func (c *Catalog) Call(ctx context.Context, req Request) (*Result, error) {
	start := c.opts.Now()
	if req.Caller.TraceID == "" {
		req.Caller.TraceID = duet.NewTraceID()
	}
	rec := &duet.AuditRecord{
		Time: start, TraceID: req.Caller.TraceID, CallSource: req.Caller.Source, Caller: req.Caller.UserID,
		Method: "tools/call", Tool: req.Tool, ArgBytes: len(req.Args),
	}
	res, err := c.call(ctx, req)
	if err != nil {
		rec.Outcome = duet.CodeNotFound
	} else {
		rec.Outcome, rec.ResultBytes = res.Code, len(res.Structured)+len(res.Text)
	}
	rec.DurationUs = c.opts.Now().Sub(start).Microseconds()
	c.Audit(rec)
	return res, err
}

// Audit records a call that did not go through Call (tools/list,
// initialize, REST and CLI paths).
func (c *Catalog) Audit(rec *duet.AuditRecord) {
	if c.opts.Auditor != nil {
		c.opts.Auditor.Record(rec)
	}
}

func (c *Catalog) call(ctx context.Context, req Request) (*Result, error) {
	t, ok := c.byName[req.Tool]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, req.Tool)
	}
	if req.Caller.UserID == "" {
		return errorResult(duet.Errorf(duet.CodeUnauthenticated, "no caller identity")), nil
	}
	if len(req.Args) > c.opts.Limits.MaxArgBytes {
		return errorResult(duet.Errorf(duet.CodeTooLarge, "arguments are %d bytes; the limit is %d", len(req.Args), c.opts.Limits.MaxArgBytes)), nil
	}
	if ctx.Value(slotKey{}) == nil {
		release, err := c.Acquire(req.Caller.UserID)
		if err != nil {
			return errorResult(err), nil
		}
		defer release()
	}
	timeout := c.opts.Limits.Timeout
	streaming := req.Progress != nil && t.streams
	if streaming {
		timeout = c.opts.Limits.StreamTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	progress := req.Progress
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	env := &Env{Caller: req.Caller, Store: c.store, Catalog: c, Progress: progress, Streaming: streaming}
	out, err := c.runTool(ctx, t, env, req.Args)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = duet.Errorf(duet.CodeTimeout, "the call did not finish within %s", timeout)
		}
		if duet.ErrorCode(err) == duet.CodeInternal {
			c.log.ErrorContext(ctx, "tool failed", "tool", t.Name, "traceId", req.Caller.TraceID, "err", err)
		}
		return errorResult(err), nil
	}
	structured, err := json.Marshal(out)
	if err != nil {
		c.log.ErrorContext(ctx, "encoding a result", "tool", t.Name, "traceId", req.Caller.TraceID, "err", err)
		return errorResult(err), nil
	}
	text := out.(Texter).Text()
	if n := len(structured) + len(text); n > c.opts.Limits.MaxResultBytes {
		return errorResult(duet.Errorf(duet.CodeTooLarge, "the result is %d bytes; the limit is %d (ask for a smaller page)", n, c.opts.Limits.MaxResultBytes)), nil
	}
	return &Result{Text: text, Structured: structured, Code: duet.OutcomeOK}, nil
}

// runTool runs the tool, turning a panic into an internal error.
func (c *Catalog) runTool(ctx context.Context, t *Tool, env *Env, args json.RawMessage) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %s panicked: %v", t.Name, r)
		}
	}()
	out, err = t.run(ctx, env, args)
	if err == nil && (out == nil || reflect.ValueOf(out).IsZero() && reflect.ValueOf(out).Kind() == reflect.Pointer) {
		err = fmt.Errorf("tool %s returned nothing", t.Name)
	}
	return out, err
}

type slotKey struct{}

// WithSlot marks ctx as holding a slot taken with Acquire, so that Call does
// not take another (transports that must answer RATE_LIMITED themselves,
// with HTTP 429, acquire first).
func WithSlot(ctx context.Context) context.Context { return context.WithValue(ctx, slotKey{}, true) }

// Acquire takes a global and a per-caller slot without waiting, and returns
// the function that gives them back. Returns RATE_LIMITED.
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
	return func() {
		c.mu.Lock()
		if c.per[user]--; c.per[user] == 0 {
			delete(c.per, user)
		}
		c.mu.Unlock()
		<-c.global
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
