// Package mcpserver exposes the catalog through the official MCP Go SDK: over
// stdio (duet mcp) and over Streamable HTTP (/mcp/http). It only translates:
// every tools/call becomes one catalog.Call with the caller taken from the
// context the transport set up.
package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
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
	Setup func(*mcp.Server)
	// ServerOptions, if set, is used as the base of the SDK server options.
	ServerOptions *mcp.ServerOptions
	// Prompts are offered with prompts/list and prompts/get (see prompts.go);
	// nil means none.
	Prompts []*Prompt
}

// Server is the catalog as an MCP server.
type Server struct {
	cat *catalog.Catalog
	srv *mcp.Server
	log *slog.Logger
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
	so.Logger = log
	if so.Instructions == "" {
		so.Instructions = "Duet is a testing platform. Use list_test_tasks to find the tasks you can access, " +
			"start_test_run (with an idempotencyKey) to run one, then poll get_test_run until done and read get_execution_result."
	}
	so.SetCacheable = func(ctx context.Context, req mcp.Request, c *mcp.Cacheable) {
		// The catalog is fixed for the life of the process, but what a
		// caller may see is per caller: private, short-lived.
		c.TTLMs, c.CacheScope = 60_000, "private"
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Title: "Duet testing platform", Version: opts.Version}, so)
	s := &Server{cat: cat, srv: srv, log: log}
	for _, t := range cat.Tools() {
		srv.AddTool(sdkTool(t), s.handler())
	}
	s.addPrompts(opts.Prompts)
	if opts.Setup != nil {
		opts.Setup(srv)
	}
	srv.AddReceivingMiddleware(s.audit)
	return s
}

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
		caller := callerOf(ctx, req.Params.Meta)
		var progress func(p, total float64, msg string)
		if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
			progress = func(p, total float64, msg string) {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: total, Message: msg})
			}
		}
		call := &callState{session: req.Session}
		ctx = context.WithValue(ctx, callKey{}, call)
		res, err := s.cat.Call(ctx, catalog.Request{Caller: caller, Tool: req.Params.Name, Args: req.Params.Arguments, Progress: progress})
		if err != nil {
			// Unknown tool: the SDK answers that itself before calling us;
			// this is a defence in depth.
			return nil, err
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

// audit records every request other than tools/call (which the catalog
// audits itself): initialize, server/discover, tools/list, ...
func (s *Server) audit(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" || len(method) > 14 && method[:14] == "notifications/" {
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		c := callerOf(ctx, nil)
		rec := &duet.AuditRecord{Time: start, TraceID: c.TraceID, CallSource: c.Source, Caller: c.UserID, Method: method, Outcome: duet.OutcomeOK,
			DurationUs: time.Since(start).Microseconds()}
		if err != nil {
			rec.Outcome = duet.CodeInvalidArgument
		}
		if p := req.GetParams(); p != nil {
			if b, err := json.Marshal(p); err == nil {
				rec.ArgBytes = len(b)
			}
		}
		if res != nil {
			if b, err := json.Marshal(res); err == nil {
				rec.ResultBytes = len(b)
			}
		}
		s.cat.Audit(rec)
		return res, err
	}
}
