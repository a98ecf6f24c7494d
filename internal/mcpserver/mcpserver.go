// Package mcpserver exposes the catalog through the official MCP Go SDK: over
// stdio (duet mcp) and over Streamable HTTP (/mcp/http). It only translates:
// every tools/call becomes one catalog.Call with the caller taken from the
// context the transport set up.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver/fast"
)

// TraceMetaKey is the _meta key under which tool results carry the call's
// trace id.
const TraceMetaKey = "io.duet/traceId"

// Options configure the MCP server.
type Options struct {
	Name    string // server name in serverInfo; "" means "duet"
	Version string // "" means "dev"
	Logger  *slog.Logger
	// Setup, if set, adds more features (resources, prompts) to the server.
	// It must not change how tools/call is answered: the fast paths
	// (package fast) answer plain calls without the SDK.
	Setup func(*mcp.Server)
	// ServerOptions, if set, is used as the base of the SDK server options.
	ServerOptions *mcp.ServerOptions
	// Prompts are offered with prompts/list and prompts/get (see prompts.go);
	// nil means none.
	Prompts []*Prompt
	// Codes translates error codes into HTTP statuses and JSON-RPC error
	// codes: Duet's one table is httpapi.Codes. nil means none is known:
	// every error is a server error (HTTP 500, JSON-RPC -32603).
	Codes Codes
	// FastPath turns the fast paths (package fast) on or off, on both
	// transports: DUET_MCP_FAST_PATH.
	FastPath FastPath
}

// FastPath says whether the fast paths (package fast) answer the plain
// tools/call requests they serve — byte for byte as the SDK would, without
// its per-request machinery — or the go-sdk answers every request.
type FastPath int

const (
	// FastPathDefault is on, except in a test binary run with
	// DUET_MCP_FAST_PATH=off (fast.OffInTests): that is how the whole
	// suite runs with the fast paths off.
	FastPathDefault FastPath = iota
	// FastPathOn is on whatever the environment: the tests that compare
	// the fast paths with the SDK.
	FastPathOn
	// FastPathOff sends every request through the go-sdk alone
	// (DUET_MCP_FAST_PATH=off).
	FastPathOff
)

// on reports whether f turns the fast paths on.
func (f FastPath) on() bool {
	return f == FastPathOn || f == FastPathDefault && !fast.OffInTests()
}

// Codes translates error codes to the wire (see httpapi.Codes).
type Codes interface {
	Status(duet.Code) int
	RPCCode(duet.Code) int
}

type serverErrors struct{}

func (serverErrors) Status(duet.Code) int  { return 500 }
func (serverErrors) RPCCode(duet.Code) int { return int(jsonrpc.CodeInternalError) }

// Server is the catalog as an MCP server.
type Server struct {
	cat    *catalog.Catalog
	srv    *mcp.Server
	log    *slog.Logger
	sdkLog *slog.Logger // log without session ids, for the SDK
	codes  Codes
	fast   *fast.Paths // nil when the fast paths are off
}

// New builds the MCP server for cat.
func New(cat *catalog.Catalog, opts Options) *Server {
	if opts.Name == "" {
		opts.Name = "duet"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	so := &mcp.ServerOptions{}
	if opts.ServerOptions != nil {
		c := *opts.ServerOptions
		so = &c
	}
	sdkLog := slog.New(redactSessions{log.Handler()})
	so.Logger = sdkLog
	if so.Instructions == "" {
		so.Instructions = "Duet is a testing platform. Use list_test_tasks to find the tasks you can access, " +
			"start_test_run (with an idempotencyKey) to run one, then poll get_test_run until done and read get_execution_result."
	}
	// The Tasks extension is served on every transport (tasks.go).
	if so.Capabilities == nil {
		// The SDK's default capabilities (logging), plus the extension.
		//lint:ignore SA1019 logging is deprecated in 2026-07-28 but still served to the handshake era
		so.Capabilities = &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	} else {
		c := *so.Capabilities
		so.Capabilities = &c
	}
	so.Capabilities.Extensions = map[string]any{catalog.TasksExtension: map[string]any{}}
	so.SetCacheable = func(ctx context.Context, req mcp.Request, c *mcp.Cacheable) {
		// The catalog is fixed for the life of the process, but what a
		// caller may see is per caller: private, short-lived.
		c.TTLMs, c.CacheScope = 60_000, "private"
	}
	impl := &mcp.Implementation{Name: opts.Name, Title: "Duet testing platform", Version: opts.Version}
	srv := mcp.NewServer(impl, so)
	codes := opts.Codes
	if codes == nil {
		codes = serverErrors{}
	}
	s := &Server{cat: cat, srv: srv, log: log, sdkLog: sdkLog, codes: codes}
	for _, t := range cat.Tools() {
		srv.AddTool(sdkTool(t), s.handler())
	}
	if opts.FastPath.on() {
		s.fast = fast.New(fast.Options{Catalog: cat, ServerInfo: impl, Call: s.fastCall, Logger: log,
			RPCError:   func(err error) *jsonrpc.Error { return s.rpcError(err).(*jsonrpc.Error) },
			WriteError: s.writeError})
	}
	s.addPrompts(opts.Prompts)
	s.addTasks()
	if opts.Setup != nil {
		opts.Setup(srv)
	}
	srv.AddReceivingMiddleware(s.govern)
	return s
}

// FastPathServed returns how many requests the fast paths have answered
// (for tests that must prove they served, and for metrics).
func (s *Server) FastPathServed() int64 { return s.fast.Served() }

// SDK returns the underlying go-sdk server.
func (s *Server) SDK() *mcp.Server { return s.srv }

func boolPtr(b bool) *bool { return &b }

// SDKTool describes a catalog tool as MCP tools/list shows it. MCP-Lite's
// tools/list serves the very same objects.
func SDKTool(t *catalog.Tool) *mcp.Tool { return sdkTool(t) }

func sdkTool(t *catalog.Tool) *mcp.Tool {
	return &mcp.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
		Annotations: &mcp.ToolAnnotations{
			Title:           t.Title,
			ReadOnlyHint:    t.Annotations.ReadOnly,
			IdempotentHint:  t.Annotations.Idempotent,
			DestructiveHint: boolPtr(t.Annotations.Destructive),
			OpenWorldHint:   boolPtr(t.Annotations.OpenWorld),
		},
	}
}

var traceparentRe = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$`)

// TraceIDFromTraceparent extracts the trace id of a W3C traceparent value, or "".
func TraceIDFromTraceparent(v string) string {
	m := traceparentRe.FindStringSubmatch(v)
	if m == nil || m[1] == "00000000000000000000000000000000" {
		return ""
	}
	return m[1]
}

// callerOf returns the caller the transport put in ctx, with a trace id from
// the request's _meta.traceparent when the transport had none.
func callerOf(ctx context.Context, meta map[string]any) duet.Caller {
	c, _ := duet.CallerFromContext(ctx)
	if c.TraceID == "" {
		if tp, ok := meta["traceparent"].(string); ok {
			c.TraceID = TraceIDFromTraceparent(tp)
		}
	}
	if c.TraceID == "" {
		c.TraceID = duet.NewTraceID()
	}
	return c
}

func (s *Server) handler() mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// The caller of this request was put in ctx by govern; the slot it
		// holds is the request's (slotOf).
		if h, ok := ctx.Value(taskHolderKey{}).(*taskHolder); ok {
			h.ran = true // catalog.Call audits the call
		}
		caller := callerOf(ctx, req.Params.Meta)
		var progress func(p, total float64, msg string)
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			progress = func(p, total float64, msg string) {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: total, Message: msg})
			}
		}
		call := &callState{session: req.Session}
		ctx = context.WithValue(ctx, callKey{}, call)
		res, err := s.cat.Call(ctx, catalog.Request{Caller: caller, Tool: req.Params.Name, Args: req.Params.Arguments, Progress: progress,
			Confirmer: elicitConfirmer(req.Session), Input: callInput(ctx, req), Extensions: extensionsOf(req.ClientCapabilities()), Slot: slotOf(req)})
		if err != nil {
			// Unknown tool: the SDK answers that itself before calling us;
			// this is a defence in depth. A bad request state or a missing
			// client capability: a protocol error, as a bare *jsonrpc.Error
			// (the SDK passes only that through as one).
			return nil, protocolError(err)
		}
		if res.Task != nil {
			// A created task: govern answers with it (tasks.go).
			if h, ok := ctx.Value(taskHolderKey{}).(*taskHolder); ok {
				h.task = res.Task
				return &mcp.CallToolResult{}, nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "INTERNAL: internal error"}
		}
		if len(res.InputRequests) > 0 {
			ir, err := inputRequests(res.InputRequests)
			if err != nil {
				s.log.ErrorContext(ctx, "encoding input requests", "tool", req.Params.Name, "traceId", caller.TraceID, "err", err)
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "INTERNAL: internal error"}
			}
			return &mcp.CallToolResult{Meta: mcp.Meta{TraceMetaKey: caller.TraceID}, InputRequests: ir, RequestState: res.RequestState}, nil
		}
		out := ToolResult(res, caller.TraceID)
		if call.content != nil && !res.IsError {
			out.Content = call.content
		}
		return out, nil
	}
}

// callState is what a catalog tool may reach of the MCP tools/call it runs
// in (see Session and SetContent).
type callState struct {
	session *mcp.ServerSession
	content []mcp.Content
}

type callKey struct{}

// Session returns the MCP session of the tools/call that ctx belongs to, or
// nil when the call came by another transport (MCP-Lite, CLI). A tool that
// logs to the client or asks it something (elicitation, sampling) uses it;
// in stateless HTTP mode the session lives for one request and cannot ask.
func Session(ctx context.Context) *mcp.ServerSession {
	if c, ok := ctx.Value(callKey{}).(*callState); ok {
		return c.session
	}
	return nil
}

// SetContent makes blocks the content of the MCP result of the tools/call
// that ctx belongs to, in place of the single text block (for tools whose
// output is an image, audio or an embedded resource). structuredContent is
// unchanged, and other transports keep the text block. A failed call keeps
// its error text. Outside an MCP tools/call it does nothing.
func SetContent(ctx context.Context, blocks ...mcp.Content) {
	if c, ok := ctx.Value(callKey{}).(*callState); ok {
		c.content = blocks
	}
}

// ToolResult converts a catalog result to the MCP wire form.
func ToolResult(res *catalog.Result, traceID string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta:              mcp.Meta{TraceMetaKey: traceID},
		Content:           []mcp.Content{&mcp.TextContent{Text: res.Text}},
		StructuredContent: json.RawMessage(res.Structured),
		IsError:           res.IsError,
	}
}

// fastCall is the governed call of a tools/call the fast paths answer
// (fast.Options.Call): the same catalog.Call as the SDK path's handler,
// with the caller of ctx and a trace id from meta's traceparent or a new
// one, and its result assembled as the handler assembles it. Tools may
// replace their content blocks (SetContent) as on the SDK path; tools that
// talk back to the client through the session are declared streaming and
// never come here. An error of the call is the JSON-RPC error the handler's
// protocolError gives the SDK to send. slot is the one the HTTP door took
// (nil over stdio).
func (s *Server) fastCall(ctx context.Context, params *mcp.CallToolParamsRaw, meta map[string]any, slot *catalog.Slot) (*mcp.CallToolResult, string, *jsonrpc.Error) {
	caller := callerOf(ctx, meta)
	call := &callState{}
	ctx = context.WithValue(ctx, callKey{}, call)
	res, err := s.cat.Call(ctx, catalog.Request{Caller: caller, Tool: params.Name, Args: params.Arguments, Slot: slot})
	if err != nil {
		return nil, caller.TraceID, s.callError(err)
	}
	tr := ToolResult(res, caller.TraceID)
	if call.content != nil && !res.IsError {
		tr.Content = call.content
	}
	return tr, caller.TraceID, nil
}

// callError is the JSON-RPC error the SDK path answers for an error of
// catalog.Call: the tool handler returns protocolError's, which the SDK
// sends as it is.
func (s *Server) callError(err error) *jsonrpc.Error {
	var jerr *jsonrpc.Error
	if errors.As(protocolError(err), &jerr) {
		return jerr
	}
	return s.rpcError(duet.Errorf(duet.CodeInternal, "internal error")).(*jsonrpc.Error)
}

// requestContext returns ctx with the caller of req — the one its HTTP
// request carried (RequestExtra.TokenInfo, see HTTPHandler), or the one the
// transport put in ctx (stdio).
func requestContext(ctx context.Context, req mcp.Request) context.Context {
	ex := req.GetExtra()
	if ex == nil || ex.TokenInfo == nil {
		return ctx
	}
	st, ok := ex.TokenInfo.Extra[extraKey].(*requestState)
	if !ok {
		return ctx
	}
	ctx = duet.NewContextWithCaller(ctx, st.caller)
	if st.oneShot {
		ctx = context.WithValue(ctx, oneShotKey{}, true)
	}
	return ctx
}

// slotOf returns the concurrency slot the HTTP request of req holds (taken
// at the door, see HTTPHandler), or nil: the catalog takes one.
func slotOf(req mcp.Request) *catalog.Slot {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if st, ok := ex.TokenInfo.Extra[extraKey].(*requestState); ok {
			return st.slot
		}
	}
	return nil
}

// markGoverned notes on the HTTP request of req (requestState) that a
// handler took it: its outcome is audited by the pipeline.
func markGoverned(req mcp.Request) {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		if st, ok := ex.TokenInfo.Extra[extraKey].(*requestState); ok {
			st.governed.Store(true)
		}
	}
}

// govern puts every MCP method through the catalog's governance pipeline
// (catalog.Govern: identity, concurrency caps, a timeout, a result-size
// cap, an audit record): resources/read, prompts/get, tools/list,
// initialize, ... tools/call goes through catalog.Call in the tool handler;
// notifications are not calls.
func (s *Server) govern(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = requestContext(ctx, req)
		if !strings.HasPrefix(method, "notifications/") {
			markGoverned(req) // audited from here on (catalog.Call, catalog.Govern, or below)
		}
		if method == "tools/call" {
			h := &taskHolder{}
			res, err := next(context.WithValue(ctx, taskHolderKey{}, h), method, req)
			if err == nil && h.task != nil {
				return &createTaskResult{ResultType: "task", taskFields: fieldsOf(h.task)}, nil
			}
			if err != nil && !h.ran {
				// The SDK refused the call before the tool handler (an
				// unknown tool): catalog.Call never saw it, audit it here.
				op := catalog.Op{Method: method}
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
					op.Name, op.ArgBytes = p.Name, len(p.Arguments)
					op.Caller = callerOf(ctx, p.Meta)
				} else {
					op.Caller = callerOf(ctx, nil)
				}
				refusal := classify(err)
				if _, known := s.cat.Tool(op.Name); !known {
					refusal = duet.Errorf(duet.CodeNotFound, "unknown tool %q", op.Name)
				}
				s.cat.Refuse(op, refusal)
			}
			return res, err
		}
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		var meta map[string]any
		op := catalog.Op{Method: method, Stream: method == "subscriptions/listen", Slot: slotOf(req)}
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			meta = p.GetMeta()
			if b, err := json.Marshal(p); err == nil {
				op.ArgBytes = len(b)
			}
			switch p := p.(type) {
			case *mcp.GetPromptParams:
				op.Name = p.Name
			case *mcp.ReadResourceParams:
				op.Name = p.URI
			case *mcp.SubscribeParams:
				op.Name = p.URI
			case *mcp.UnsubscribeParams:
				op.Name = p.URI
			}
		}
		op.Caller = callerOf(ctx, meta)
		ctx = duet.NewContextWithCaller(ctx, op.Caller)
		var res mcp.Result
		err := s.cat.Govern(ctx, op, func(ctx context.Context) (int, error) {
			var err error
			res, err = next(ctx, method, req)
			if err != nil {
				return 0, classify(err)
			}
			if method == "tools/list" {
				res = s.listed(ctx, op.Caller.UserID, res)
			}
			if res == nil || op.Stream {
				return 0, nil
			}
			b, err := json.Marshal(res)
			if err != nil {
				return 0, err
			}
			return len(b), nil
		})
		if err != nil {
			return nil, s.rpcError(err)
		}
		return res, nil
	}
}

// classify gives an error of an SDK handler a code for the audit trail,
// keeping the error itself: a JSON-RPC error by its code, a Duet error by
// its own.
func classify(err error) error {
	var jerr *jsonrpc.Error
	if !errors.As(err, &jerr) || duet.ErrorCode(err) != duet.CodeInternal {
		return err
	}
	code := duet.CodeInvalidRequest
	switch jerr.Code {
	case jsonrpc.CodeInvalidParams: // also mcp.CodeResourceNotFound (SEP-2164)
		code = duet.CodeInvalidArgument
	case jsonrpc.CodeMethodNotFound:
		code = duet.CodeNotFound
	case jsonrpc.CodeInternalError:
		code = duet.CodeInternal
	}
	return &duet.Error{Code: code, Message: jerr.Message, Err: jerr}
}

// rpcError is the JSON-RPC error a client gets for err: the handler's own
// JSON-RPC error when the pipeline let it through unchanged, otherwise
// "CODE: message" with the code's JSON-RPC number.
func (s *Server) rpcError(err error) error {
	var jerr *jsonrpc.Error
	if errors.As(err, &jerr) && duet.ErrorCode(classify(jerr)) == duet.ErrorCode(err) {
		return jerr
	}
	code := duet.ErrorCode(err)
	return &jsonrpc.Error{Code: int64(s.codes.RPCCode(code)), Message: string(code) + ": " + duet.ErrorMessage(err)}
}

// redactSessions is the log handler the SDK writes to: it never lets a
// session id through (a session id is a bearer of the session), and it
// logs the SDK's Info records ("server connecting", "server session
// connected", ... once per stateless HTTP request) at Debug.
type redactSessions struct{ h slog.Handler }

func sdkLevel(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (r redactSessions) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, sdkLevel(l))
}

func (r redactSessions) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, sdkLevel(rec.Level), rec.Message, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r redactSessions) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a)
	}
	return redactSessions{r.h.WithAttrs(red)}
}

func (r redactSessions) WithGroup(name string) slog.Handler {
	return redactSessions{r.h.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindGroup {
		g := a.Value.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = redactAttr(x)
		}
		return slog.Group(a.Key, red...)
	}
	k := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(a.Key))
	if strings.Contains(k, "sessionid") {
		return slog.String(a.Key, "[redacted]")
	}
	return a
}
