package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
)

// resyncAfter is how old an archived catalog must be before a call to a tool
// missing from it triggers one re-sync.
const resyncAfter = time.Minute

// Invoke calls a tool as req.Executor: it resolves the executor's own
// registration of req.ServerKey and credentials (never anyone else's), checks
// the tool against the archived catalog, calls it within the call timeout on
// the executor's cached session and passes content and structuredContent
// through as the server sent them. Every call, failed or not, leaves an
// invocation record with sizes, never values.
//
// A result with isError comes back together with an MCP_TOOL_ERROR error.
// Returns INVALID_ARGUMENT, MCP_SERVER_NOT_CONFIGURED, MCP_TOOL_NOT_FOUND,
// MCP_CALL_TIMEOUT, MCP_AUTH_FAILED, MCP_TOOL_ERROR, MCP_UNREACHABLE,
// MCP_PROTOCOL_MISMATCH, URL_REFUSED, CANCELLED, UNAVAILABLE,
// CALL_DEPTH_EXCEEDED (the call would be deeper in a chain of Duet calls
// than Options.MaxCallDepth: nothing is sent).
func (c *Client) Invoke(ctx context.Context, req duet.InvokeRequest) (*duet.ToolResult, error) {
	return c.invoke(ctx, nil, req)
}

// invoke is Invoke; its sync and its session may ask a person through a
// (nil: nobody) when the server wants a new authorization.
func (c *Client) invoke(ctx context.Context, a *Authorizer, req duet.InvokeRequest) (res *duet.ToolResult, err error) {
	start := time.Now()
	if req.TraceID == "" {
		req.TraceID = duet.NewTraceID()
	}
	args := req.Arguments
	if args == nil {
		args = map[string]any{}
	}
	argJSON, merr := encodeArguments(args)
	resultBytes := 0
	defer func() {
		outcome := duet.OutcomeOK
		if err != nil {
			outcome = duet.ErrorCode(err)
		}
		c.records.add(&duet.Invocation{Time: start.UTC(), TraceID: req.TraceID, Executor: req.Executor, Source: req.Source,
			ServerKey: req.ServerKey, Tool: req.Tool, Outcome: outcome, DurationUs: time.Since(start).Microseconds(),
			ArgBytes: len(argJSON), ResultBytes: resultBytes})
	}()
	switch {
	case merr != nil:
		return nil, duet.WrapError(duet.CodeInvalidArgument, merr, "the arguments of %s cannot be encoded as JSON", req.Tool)
	case req.Executor == "":
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a call needs an executor")
	case req.Source == "":
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a call needs a source (cli, agent, engine, web, ...)")
	case req.ServerKey == "" || req.Tool == "":
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a call needs a serverKey and a tool")
	}
	if _, err := calldepth.Next(ctx, c.opts.MaxCallDepth); err != nil {
		return nil, err
	}
	reg, tool, err := c.store.FindMCPServerTool(ctx, req.Executor, req.ServerKey, req.Tool)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		return nil, duet.Errorf(duet.CodeMCPServerNotConfigured,
			"%s has not registered MCP server %s: register its address with `duet server add --as %s` (`duet task show TASK --as %s` prints the addresses of the servers a task calls; a shared task carries the serverKey, never its author's credentials)",
			req.Executor, req.ServerKey, req.Executor, req.Executor)
	}
	if err != nil {
		return nil, err
	}
	if tool == nil {
		if reg.SyncedAt == nil || time.Since(*reg.SyncedAt) > resyncAfter {
			synced, serr := c.sync(ctx, a, reg)
			if serr != nil && reg.SyncedAt == nil {
				return nil, serr
			}
			if serr == nil {
				reg = synced
				if _, tool, err = c.store.FindMCPServerTool(ctx, req.Executor, req.ServerKey, req.Tool); err != nil {
					return nil, err
				}
			}
		}
		if tool == nil {
			return nil, duet.Errorf(duet.CodeMCPToolNotFound, "MCP server %s (%s) has no tool %q in its catalog (%d tools, synced %s)",
				reg.Name, reg.ServerKey, req.Tool, reg.ToolCount, syncedAgo(reg.SyncedAt))
		}
	}
	// Scrubbed by call of every credential value the session held or
	// the call sent (scrub.go).
	res, resultBytes, err = c.call(withTrace(ctx, req.TraceID), a, reg, tool, argJSON)
	return res, err
}

func syncedAgo(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// call runs tools/call on the executor's session with the arguments
// argJSON (a JSON object, sent as it is). It retries once, on a new session,
// only when that cannot run the tool twice: the server no longer knew the
// session, or the tool is annotated read-only or idempotent and the
// failure was transient. The result and the error come back scrubbed of
// every credential value the session held or the call sent (scrub.go);
// an error from opening the session was scrubbed by connect. The session
// may ask a person through a (nil: nobody; see acquire).
func (c *Client) call(ctx context.Context, a *Authorizer, reg *duet.MCPServer, tool *duet.MCPTool, argJSON json.RawMessage) (*duet.ToolResult, int, error) {
	cctx, cancel := context.WithTimeoutCause(ctx, c.opts.CallTimeout, errCallTimeout)
	defer cancel()
	cctx = withParamHeaders(cctx, c.plans.headers(tool.InputSchema, argJSON))
	k := sessionKey{reg.Owner, reg.ServerKey}
	for attempt := 0; ; attempt++ {
		e, err := c.acquire(cctx, reg, a)
		if err != nil {
			if cctx.Err() != nil && duet.ErrorCode(err) == duet.CodeInternal {
				err = c.classify(cctx, reg, err, nil)
			}
			return nil, 0, err
		}
		obs := &observer{capture: true}
		res, err := e.s.cs.CallTool(withObserver(cctx, obs), &mcp.CallToolParams{Name: tool.Name, Arguments: argJSON})
		c.release(e)
		sc := c.scrubber(e.s, obs)
		if err == nil {
			tr, size := toolResult(res, obs)
			sc.result(tr)
			if tr.IsError {
				return tr, size, duet.Errorf(duet.CodeMCPToolError, "tool %s of MCP server %s reported an error: %s",
					tool.Name, reg.Name, orNoText(sanitize(tr.Text(), 300)))
			}
			return tr, size, nil
		}
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			// The session may be broken: the next call gets a new one.
			c.retire(k, e)
		}
		if attempt == 0 && cctx.Err() == nil {
			_, transient := obs.transient()
			if isSessionGone(err) || (transient || !obs.delivered()) && safeToRepeat(tool) {
				if transient {
					sleep(cctx, 200*time.Millisecond)
				}
				continue
			}
		}
		return nil, 0, sc.err(c.callError(cctx, reg, tool.Name, err, obs, sc))
	}
}

func orNoText(s string) string {
	if s == "" {
		return "(no text)"
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// safeToRepeat reports whether the archived annotations say the tool is
// read-only or idempotent.
func safeToRepeat(t *duet.MCPTool) bool {
	var a struct {
		ReadOnly   bool `json:"readOnlyHint"`
		Idempotent bool `json:"idempotentHint"`
	}
	if len(t.Annotations) == 0 || json.Unmarshal(t.Annotations, &a) != nil {
		return false
	}
	return a.ReadOnly || a.Idempotent
}

// callError maps a failed request on an open session to a code. What the
// server said is scrubbed (sc) before it is cut to length.
func (c *Client) callError(ctx context.Context, reg *duet.MCPServer, tool string, err error, obs *observer, sc scrubber) error {
	if e := c.classify(ctx, reg, err, obs); e != nil {
		return e
	}
	// An HTTP failure status: the SDK reports it as a JSON-RPC error too.
	if r, ok := obs.find(func(r response) bool { return r.status >= 500 || r.status == http.StatusTooManyRequests }); ok {
		return duet.WrapError(duet.CodeMCPUnreachable, err, "MCP server %s answered %d %s to %s", reg.Name, r.status, http.StatusText(r.status), tool)
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		msg := sanitize(sc.text(je.Message), 300)
		if je.Code == jsonrpc.CodeMethodNotFound || strings.Contains(strings.ToLower(je.Message), "unknown tool") ||
			strings.Contains(strings.ToLower(je.Message), "tool not found") {
			c.scheduleResync(sessionKey{reg.Owner, reg.ServerKey})
			return duet.WrapError(duet.CodeMCPToolNotFound, err, "MCP server %s does not know tool %q (JSON-RPC error %d: %s); its catalog is being re-synced",
				reg.Name, tool, je.Code, msg)
		}
		return duet.WrapError(duet.CodeMCPToolError, err, "MCP server %s rejected the call to %s: JSON-RPC error %d: %s", reg.Name, tool, je.Code, msg)
	}
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrSessionMissing) {
		return duet.WrapError(duet.CodeMCPUnreachable, err, "the connection to MCP server %s broke during %s", reg.Name, tool)
	}
	if r, ok := obs.find(func(r response) bool { return r.status >= 300 && r.status < 500 }); ok {
		return duet.WrapError(duet.CodeMCPProtocolMismatch, err, "MCP server %s answered %d %s to %s", reg.Name, r.status, orUnknown(r.ctype), tool)
	}
	return duet.WrapError(duet.CodeMCPProtocolMismatch, err, "the answer of MCP server %s to %s could not be read as MCP: %s", reg.Name, tool, sanitize(sc.text(err.Error()), 200))
}

// toolResult builds the result from the bytes the server sent when they
// were captured (Streamable HTTP), so that content and structuredContent pass
// through unchanged, and from the SDK's decoding otherwise (legacy SSE, a
// reply on a resumed stream). It also returns the result's size in bytes.
func toolResult(res *mcp.CallToolResult, obs *observer) (*duet.ToolResult, int) {
	tr := &duet.ToolResult{IsError: res.IsError}
	if raw := capturedResult(obs); raw != nil {
		var r struct {
			Content           json.RawMessage `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		}
		if sdkUnmarshal(raw, &r) == nil && r.IsError == res.IsError && len(r.Content) > 0 && string(r.Content) != "null" {
			tr.Content, _ = compact(r.Content)
			if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
				tr.StructuredContent, _ = compact(r.StructuredContent)
			}
			return tr, len(raw)
		}
	}
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	tr.Content, _ = json.Marshal(content)
	if res.StructuredContent != nil {
		tr.StructuredContent, _ = json.Marshal(res.StructuredContent)
	}
	return tr, len(tr.Content) + len(tr.StructuredContent)
}

// capturedResult returns the result member of the JSON-RPC response in the
// captured POST body (JSON or an SSE stream), or nil. The body is read as
// the SDK read it (sdkUnmarshal); the result aliases the captured body,
// which the observer hands over.
func capturedResult(obs *observer) json.RawMessage {
	body, ctype := obs.captured()
	if len(body) == 0 {
		return nil
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	var msgs [][]byte
	switch mt {
	case "application/json":
		msgs = [][]byte{body}
	case "text/event-stream":
		msgs = sseData(body)
	default:
		return nil
	}
	for _, m := range msgs {
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if sdkParse(m, &resp, sjson.DontCopyRawMessage) == nil && len(resp.ID) > 0 && string(resp.ID) != "null" && len(resp.Result) > 0 {
			return resp.Result
		}
	}
	return nil
}

// sseData returns the data of every event in an SSE body.
func sseData(b []byte) [][]byte {
	var out [][]byte
	var data [][]byte
	flush := func() {
		if len(data) > 0 {
			out = append(out, bytes.Join(data, []byte("\n")))
			data = nil
		}
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			flush()
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	flush()
	return out
}
