package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// HTTPOptions configure the Streamable HTTP endpoint.
type HTTPOptions struct {
	// MaxBodyBytes limits a request body; 0 means 4 MiB. Larger bodies get
	// 413 with a JSON-RPC error.
	MaxBodyBytes int64
	// Sessions turns on stateful mode (Mcp-Session-Id, server-to-client
	// requests such as elicitation) for single-instance deployments. The
	// default is stateless: any instance answers any request.
	Sessions bool
	// Streams reports whether a call to a tool emits notifications (so its
	// reply must stream); nil means only calls that carry a progressToken
	// stream.
	Streams func(tool string) bool
	// NoFastPath sends every request through the SDK (see fastpath.go);
	// the default serves plain tools/call requests directly.
	NoFastPath bool
}

// HTTPHandler returns the Streamable HTTP endpoint. The caller must already
// be in each request's context (see duet.NewContextWithCaller): authentication
// is the job of the middleware in front of it.
//
// In stateless mode a request that may emit notifications (a tools/call with
// a progressToken, or of a tool that streams) is answered as an event stream;
// every other request gets a plain JSON reply.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	get := func(*http.Request) *mcp.Server { return s.srv }
	if o.Sessions {
		return mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			DisableLocalhostProtection: true, // the Host check runs in front, configurable
			MaxRequestBodyBytes:        o.MaxBodyBytes,
			Logger:                     s.log,
		})
	}
	jsonH := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, DisableLocalhostProtection: true,
		MaxRequestBodyBytes: o.MaxBodyBytes, Logger: s.log, PropagateRequestCancellation: true,
	})
	sseH := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless: true, DisableLocalhostProtection: true,
		MaxRequestBodyBytes: o.MaxBodyBytes, Logger: s.log, PropagateRequestCancellation: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			jsonH.ServeHTTP(w, r) // 405 for GET/DELETE in stateless mode
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, o.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				caller, _ := duet.CallerFromContext(r.Context())
				s.cat.Audit(&duet.AuditRecord{Time: time.Now(), TraceID: caller.TraceID, CallSource: caller.Source, Caller: caller.UserID,
					Method: "http", Outcome: duet.CodeTooLarge, ArgBytes: int(mbe.Limit)})
				WriteJSONRPCError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "TOO_LARGE: the request body exceeds the limit of "+itoa(o.MaxBodyBytes)+" bytes", nil)
				return
			}
			WriteJSONRPCError(w, http.StatusBadRequest, -32700, "cannot read the request body", nil)
			return
		}
		// One parse of the envelope serves every decision below.
		var env fastRequest
		if err := json.Unmarshal(body, &env); err != nil {
			if !json.Valid(body) {
				WriteJSONRPCError(w, http.StatusBadRequest, -32700, "parse error: the body is not valid JSON", nil)
				return
			}
			env = fastRequest{} // a batch or another shape: the SDK decides
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		isCall := env.Method == "tools/call"
		tool := ""
		if isCall && env.Params != nil {
			tool = env.Params.Name
		}
		// Concurrency caps are checked here, so that an excess call gets
		// HTTP 429 with Retry-After rather than a 200 carrying an error.
		if isCall {
			caller, _ := duet.CallerFromContext(r.Context())
			release, err := s.cat.Acquire(caller.UserID)
			if err != nil {
				s.cat.Audit(&duet.AuditRecord{Time: time.Now(), TraceID: caller.TraceID, CallSource: caller.Source, Caller: caller.UserID,
					Method: "tools/call", Tool: tool, Outcome: duet.ErrorCode(err), ArgBytes: len(body)})
				w.Header().Set("Retry-After", "1")
				WriteJSONRPCError(w, http.StatusTooManyRequests, CodeRateLimited, string(duet.ErrorCode(err))+": "+duet.ErrorMessage(err), env.ID)
				return
			}
			defer release()
			r = r.WithContext(catalog.WithSlot(r.Context()))
		}
		streaming := isCall && (env.progress() || o.Streams != nil && o.Streams(tool))
		if isCall && !streaming && !o.NoFastPath && s.fastCall(w, r, &env) {
			return
		}
		ew := &errorRewriter{ResponseWriter: w, body: body}
		if streaming && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			sseH.ServeHTTP(ew, r)
		} else {
			jsonH.ServeHTTP(ew, r)
		}
		ew.finish()
	})
}

// errorRewriter turns the SDK's plain-text HTTP errors (400 for a method it
// does not handle, for instance) into JSON-RPC error bodies, which is what
// clients parse.
type errorRewriter struct {
	http.ResponseWriter
	body    []byte
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
	e.ResponseWriter.WriteHeader(status)
}

func (e *errorRewriter) Write(b []byte) (int, error) {
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

func (e *errorRewriter) finish() {
	if !e.capture {
		return
	}
	msg := strings.TrimSpace(e.buf.String())
	code := -32600 // invalid request
	if strings.Contains(msg, "not handled") || strings.Contains(msg, "unsupported") {
		code = -32601 // method not found
	}
	e.Header().Del("Content-Length")
	WriteJSONRPCError(e.ResponseWriter, e.status, code, msg, requestID(e.body))
}

func requestID(body []byte) json.RawMessage {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(body, &req)
	return req.ID
}

// JSON-RPC error codes Duet uses beyond the standard ones.
const (
	CodeUnauthenticated = -32001
	CodeForbidden       = -32003
	CodeRateLimited     = -32029
	CodeTooLarge        = -32013
)

// WriteJSONRPCError writes an HTTP error whose body is a JSON-RPC error
// response (what MCP clients expect to parse).
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

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
