package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver/fast"
)

// HTTPOptions configure the Streamable HTTP endpoint.
type HTTPOptions struct {
	// MaxBodyBytes limits a request body; 0 means 4 MiB. Larger bodies get
	// 413 with a JSON-RPC error.
	MaxBodyBytes int64
	// Sessions turns on stateful mode (Mcp-Session-Id, server-to-client
	// requests such as elicitation) for single-instance deployments. The
	// default is stateless: any instance answers any request. A session is
	// bound to the principal that created it (see WithPrincipal): a request
	// of anyone else naming it is answered exactly like one naming an
	// unknown session.
	Sessions bool
	// Streams reports whether a call to a tool emits notifications (so its
	// reply must stream); nil means only calls that carry a progressToken
	// stream.
	Streams func(tool string) bool
	// NoFastPath sends every request of this endpoint through the SDK;
	// otherwise the HTTP fast path (package fast) answers plain tools/call
	// requests when the server's fast paths are on (Options.FastPath).
	NoFastPath bool
}

type principalKey struct{}

// WithPrincipal returns a context carrying the authenticated principal of
// an HTTP request: the user and how they authenticated, as one string
// (auth.Identity.Principal). In sessions mode every session is bound to the
// principal that created it; without one, the caller's user id is used.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalOf(ctx context.Context, c duet.Caller) string {
	if p, _ := ctx.Value(principalKey{}).(string); p != "" {
		return p
	}
	if c.UserID == "" {
		return ""
	}
	return "user:" + c.UserID
}

// requestState is what one HTTP request hands the SDK's handlers through
// RequestExtra.TokenInfo: in sessions mode a handler's context is the
// session's (the request that created it), so the caller of this request,
// and the concurrency slot it holds, travel with the request instead.
type requestState struct {
	caller duet.Caller
	// slot is the call slot the door took for this request (Admit), which
	// its handler hands the catalog (catalog.Request.Slot, Op.Slot).
	slot *catalog.Slot
	// oneShot: the request goes to a stateless handler, whose session
	// lives for this request only (it cannot ask the client anything).
	oneShot bool
	// governed is set once a handler took the request (govern): its
	// outcome, a refusal included, is audited by the pipeline, and an
	// error status the SDK writes for it is not a refusal of the door.
	governed atomic.Bool
}

const extraKey = "io.duet/request"

// HTTPHandler returns the Streamable HTTP endpoint. The caller must already
// be in each request's context (see duet.NewContextWithCaller): authentication
// is the job of the middleware in front of it.
//
// Every POST body is checked strictly (body.go) and read once as the SDK
// reads it (fast.Read) before either path sees it; a call (a request with an id) is admitted by the catalog first
// (identity, concurrency caps), so that an excess call gets HTTP 429 with
// Retry-After rather than a 200 carrying an error. In stateless mode a
// request that may emit notifications (a tools/call with a progressToken,
// or of a tool that streams) is answered as an event stream; every other
// request gets a plain JSON reply.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	get := func(*http.Request) *mcp.Server { return s.srv }
	// The stateless handlers serve every 2026-07-28 request (that revision
	// has no sessions: go-sdk serves it only statelessly) and, without
	// sessions, the handshake-era ones too; with sessions, the handshake
	// era goes to the session handler. One endpoint, both eras.
	jsonH := withTokenInfo(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, DisableLocalhostProtection: true,
		MaxRequestBodyBytes: o.MaxBodyBytes, Logger: s.sdkLog, PropagateRequestCancellation: true,
	}))
	sseH := withTokenInfo(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless: true, DisableLocalhostProtection: true,
		MaxRequestBodyBytes: o.MaxBodyBytes, Logger: s.sdkLog, PropagateRequestCancellation: true,
	}))
	var sessionH http.Handler
	if o.Sessions {
		sessionH = withTokenInfo(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			DisableLocalhostProtection: true, // the Host check runs in front, configurable
			MaxRequestBodyBytes:        o.MaxBodyBytes,
			Logger:                     s.sdkLog,
		}))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := duet.CallerFromContext(r.Context())
		door := catalog.Op{Caller: caller, Method: "http " + r.Method + " " + r.URL.Path}
		var body []byte
		var req *fast.Request
		if r.Method == http.MethodPost {
			var err error
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, o.MaxBodyBytes))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					door.ArgBytes = int(mbe.Limit)
					s.refuse(w, door, nil, duet.Errorf(duet.CodeTooLarge, "the request body exceeds the limit of %d bytes", o.MaxBodyBytes))
					return
				}
				s.refuse(w, door, nil, duet.Errorf(duet.CodeInvalidRequest, "cannot read the request body"))
				return
			}
			door.ArgBytes = len(body)
			if err := checkBody(body); err != nil {
				s.refuse(w, door, nil, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			req = fast.Read(body, true, true)
		}
		if !checkTaskHeaders(&refusalAudit{ResponseWriter: w, s: s, op: door, req: req}, r, req) {
			return
		}
		state := &requestState{caller: caller}
		if req.IsCall() {
			op := catalog.Op{Caller: caller, Method: req.Method, Name: req.Name, ArgBytes: len(body), Stream: req.Method == "subscriptions/listen"}
			slot, err := s.cat.Admit(op)
			if err != nil {
				if duet.ErrorCode(err) == duet.CodeRateLimited {
					w.Header().Set("Retry-After", "1")
				}
				s.writeError(w, fast.RawID(req.ID), err)
				return
			}
			defer slot.Release()
			state.slot = slot // a stream's too: Govern takes no second one
		}
		isToolCall := req.IsCall() && req.Method == "tools/call"
		streaming := isToolCall && (req.Progress || o.Streams != nil && o.Streams(req.Name)) &&
			strings.Contains(r.Header.Get("Accept"), "text/event-stream")
		if !o.Sessions && isToolCall && !streaming && !o.NoFastPath && s.fast != nil && s.fast.ServeHTTP(w, r, req, state.slot) {
			return
		}
		ew := &errorRewriter{ResponseWriter: w, s: s, door: door, req: req, state: state, session: o.Sessions && r.Header.Get("Mcp-Session-Id") != ""}
		// The SDK binds a session to TokenInfo.UserID when it creates it
		// and compares it on every later request naming the session (GET,
		// POST, DELETE); handlers read this request's caller from Extra.
		r = withPendingTokenInfo(r, &auth.TokenInfo{
			UserID: principalOf(r.Context(), caller),
			Extra:  map[string]any{extraKey: state},
		})
		viaSession := sessionH != nil && !modernRequest(req, r.Header)
		state.oneShot = !viaSession
		switch {
		case viaSession:
			sessionH.ServeHTTP(ew, r)
		case streaming:
			sseH.ServeHTTP(ew, r)
		default:
			jsonH.ServeHTTP(ew, r)
		}
		ew.finish()
	})
}

type pendingKey struct{}

// pending is a TokenInfo on its way into a request's context, and the
// request's own headers.
type pending struct {
	info   *auth.TokenInfo
	header http.Header
}

// withPendingTokenInfo prepares r for withTokenInfo.
func withPendingTokenInfo(r *http.Request, info *auth.TokenInfo) *http.Request {
	r2 := r.WithContext(context.WithValue(r.Context(), pendingKey{}, &pending{info, r.Header}))
	r2.Header = http.Header{"Authorization": {"Bearer -"}}
	return r2
}

// withTokenInfo puts the TokenInfo prepared by withPendingTokenInfo in the
// request's context the only way the go-sdk allows — its bearer-token
// middleware — with a verifier that returns it (the credentials were
// checked in front of this handler), then gives the request its own
// headers back.
func withTokenInfo(next http.Handler) http.Handler {
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		if p, ok := ctx.Value(pendingKey{}).(*pending); ok {
			return p.info, nil
		}
		return nil, auth.ErrInvalidToken
	}
	mw := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := r.Context().Value(pendingKey{}).(*pending); ok {
			r.Header = p.header
		}
		next.ServeHTTP(w, r)
	}))
}

// statelessRevision is the first protocol revision without sessions or an
// initialize handshake (SEP-2575).
const statelessRevision = fast.StatelessRevision

// modernRequest reports whether r, with HTTP headers h, is a request of the
// stateless revisions (2026-07-28 and later): one that names no session and
// carries such a version in its MCP-Protocol-Version header or its _meta,
// or a server/discover (the first request of such a client). Everything
// else — initialize, and the requests of a handshake-era session — is not.
// The stateless handler serves the modern ones (and refuses a version it
// does not know, as it must).
func modernRequest(r *fast.Request, h http.Header) bool {
	if h.Get("Mcp-Session-Id") != "" {
		return false
	}
	if v := h.Get("Mcp-Protocol-Version"); v >= statelessRevision {
		return true
	}
	return r != nil && (r.MetaVersion >= statelessRevision || r.Method == "server/discover")
}

// refuse audits a request stopped at the door and answers it.
func (s *Server) refuse(w http.ResponseWriter, op catalog.Op, id json.RawMessage, err error) {
	s.writeError(w, id, s.cat.Refuse(op, err))
}

// writeError answers with err as a JSON-RPC error: the HTTP status and the
// JSON-RPC code of its code (Options.Codes), the message "CODE: message".
func (s *Server) writeError(w http.ResponseWriter, id json.RawMessage, err error) {
	code := duet.ErrorCode(err)
	WriteJSONRPCError(w, s.codes.Status(code), s.codes.RPCCode(code), string(code)+": "+duet.ErrorMessage(err), id)
}

// errorRewriter turns the SDK's plain-text HTTP errors into JSON-RPC error
// bodies, which is what clients parse, and audits every request the SDK
// refused (its handlers never saw it). The JSON-RPC code follows the HTTP
// status, never the wording (TestSDKRefusals pins the statuses):
//
//	404, and 403 on a request naming a session → 404 NOT_FOUND "session not found"
//	    (an unknown session and another principal's answer alike)
//	413 → TOO_LARGE, 409 → CONFLICT, 5xx → INTERNAL, other 4xx → INVALID_REQUEST
type errorRewriter struct {
	http.ResponseWriter
	s       *Server
	door    catalog.Op
	req     *fast.Request
	state   *requestState
	session bool // the request names a session

	status  int
	capture bool
	buf     bytes.Buffer
}

func (e *errorRewriter) WriteHeader(status int) {
	e.status = status
	ct := e.Header().Get("Content-Type")
	if status >= 400 && (ct == "" || strings.HasPrefix(ct, "text/plain")) {
		e.capture = true
		return
	}
	if status >= 400 && !e.state.governed.Load() {
		// A JSON-RPC error the SDK wrote itself (2026-07-28 header
		// checks, for instance): answered as is, audited here. The error
		// of a request a handler took (a tool's -32021) was audited by
		// the pipeline.
		e.audit(duet.Errorf(sdkCode(status), "refused by the protocol layer"))
	}
	e.ResponseWriter.WriteHeader(status)
}

func (e *errorRewriter) Write(b []byte) (int, error) {
	if e.status == 0 {
		e.WriteHeader(http.StatusOK)
	}
	if e.capture {
		return e.buf.Write(b)
	}
	return e.ResponseWriter.Write(b)
}

func (e *errorRewriter) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok && !e.capture {
		f.Flush()
	}
}

func (e *errorRewriter) Unwrap() http.ResponseWriter { return e.ResponseWriter }

// sdkCode is the code of an SDK refusal with HTTP status status.
func sdkCode(status int) duet.Code {
	switch {
	case status == http.StatusNotFound:
		return duet.CodeNotFound
	case status == http.StatusRequestEntityTooLarge:
		return duet.CodeTooLarge
	case status == http.StatusConflict:
		return duet.CodeConflict
	case status >= 500:
		return duet.CodeInternal
	}
	return duet.CodeInvalidRequest
}

func (e *errorRewriter) audit(err error) {
	op := e.door
	if e.req != nil {
		op.Method, op.Name = e.req.Method, e.req.Name
	}
	e.s.cat.Refuse(op, err)
}

func (e *errorRewriter) finish() {
	if !e.capture {
		return
	}
	status := e.status
	var id json.RawMessage
	if e.req != nil {
		id = fast.RawID(e.req.ID)
	}
	var err error
	switch {
	case e.session && (status == http.StatusNotFound || status == http.StatusForbidden):
		// Unknown, closed, or bound to another principal: one answer.
		status, err = http.StatusNotFound, duet.Errorf(duet.CodeNotFound, "session not found")
	case status >= 500:
		err = duet.Errorf(duet.CodeInternal, "internal error")
	default:
		err = duet.Errorf(sdkCode(status), "%s", strings.TrimSpace(e.buf.String()))
	}
	e.audit(err)
	e.Header().Del("Content-Length")
	code := duet.ErrorCode(err)
	WriteJSONRPCError(e.ResponseWriter, status, e.s.codes.RPCCode(code), string(code)+": "+duet.ErrorMessage(err), id)
}

// WriteJSONRPCError writes an HTTP error whose body is a JSON-RPC error
// response (what MCP clients expect to parse); id nil means null.
func WriteJSONRPCError(w http.ResponseWriter, status, code int, message string, id json.RawMessage) {
	if id == nil {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": message},
	})
}

// refusalAudit audits an error reply written directly (checkTaskHeaders).
type refusalAudit struct {
	http.ResponseWriter
	s   *Server
	op  catalog.Op
	req *fast.Request
}

func (a *refusalAudit) WriteHeader(status int) {
	op := a.op
	if a.req != nil {
		op.Method, op.Name = a.req.Method, a.req.TaskID
	}
	a.s.cat.Refuse(op, duet.Errorf(sdkCode(status), "refused by the protocol layer"))
	a.ResponseWriter.WriteHeader(status)
}
