// Package lite serves the MCP-Lite REST dialect some company gateways use to
// call providers: POST /mcp/tools/list → {"tools":[…]} and POST
// /mcp/tools/call with {"name","arguments","user":{"empId"}} →
// {"content","structuredContent","isError"}. It is a thin translator onto the
// same catalog call and governance as standard MCP; its tool descriptions are
// the very objects MCP tools/list serves.
package lite

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver"
)

// Handler serves the two MCP-Lite routes.
type Handler struct {
	cat          *catalog.Catalog
	maxBodyBytes int64
	tools        []*mcp.Tool
}

// New returns the MCP-Lite handler over cat.
func New(cat *catalog.Catalog, maxBodyBytes int64) *Handler {
	if maxBodyBytes <= 0 {
		maxBodyBytes = 4 << 20
	}
	h := &Handler{cat: cat, maxBodyBytes: maxBodyBytes}
	for _, t := range cat.Tools() {
		h.tools = append(h.tools, mcpserver.SDKTool(t))
	}
	// The same order as MCP tools/list (the SDK lists tools by name).
	slices.SortFunc(h.tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return h
}

// ListResponse is the body of a tools/list answer.
type ListResponse struct {
	Tools []*mcp.Tool `json:"tools"`
}

// CallRequest is the body of a tools/call request.
type CallRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	User      *struct {
		EmpID string `json:"empId"`
	} `json:"user,omitempty"`
}

// CallResponse is the body of a tools/call answer.
type CallResponse struct {
	Meta              map[string]any  `json:"_meta,omitempty"`
	Content           []mcp.Content   `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// WriteError writes the MCP-Lite form of an error that stops a request
// before any tool runs: an HTTP status and {"error":{"code","message"}}.
func WriteError(w http.ResponseWriter, status int, code duet.Code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

// List serves POST /mcp/tools/list.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	caller, _ := duet.CallerFromContext(r.Context())
	start := time.Now()
	resp := ListResponse{Tools: h.tools}
	b, _ := json.Marshal(resp)
	h.cat.Audit(&duet.AuditRecord{Time: start, TraceID: caller.TraceID, CallSource: duet.SourceMCPLite, Caller: caller.UserID,
		Method: "tools/list", Outcome: duet.OutcomeOK, ResultBytes: len(b), DurationUs: time.Since(start).Microseconds()})
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// Call serves POST /mcp/tools/call. The caller comes from the request
// context; user.empId in the body is honoured only when the request carried
// a valid gateway key (the gateway injects it), which the auth middleware
// marks with ViaGateway.
func (h *Handler) Call(viaGateway func(*http.Request) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, _ := duet.CallerFromContext(r.Context())
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				h.cat.Audit(&duet.AuditRecord{Time: time.Now(), TraceID: caller.TraceID, CallSource: duet.SourceMCPLite, Caller: caller.UserID, Method: "tools/call", Outcome: duet.CodeTooLarge})
				WriteError(w, http.StatusRequestEntityTooLarge, duet.CodeTooLarge, "the request body exceeds the limit")
				return
			}
			WriteError(w, http.StatusBadRequest, duet.CodeInvalidArgument, "cannot read the request body")
			return
		}
		var req CallRequest
		if err := json.Unmarshal(body, &req); err != nil {
			WriteError(w, http.StatusBadRequest, duet.CodeInvalidArgument, "the body must be {\"name\", \"arguments\"}: "+err.Error())
			return
		}
		if req.Name == "" {
			WriteError(w, http.StatusBadRequest, duet.CodeInvalidArgument, "name is required")
			return
		}
		if req.User != nil && req.User.EmpID != "" && viaGateway(r) {
			caller.UserID = req.User.EmpID
		}
		caller.Source = duet.SourceMCPLite
		if caller.UserID == "" {
			h.cat.Audit(&duet.AuditRecord{Time: time.Now(), TraceID: caller.TraceID, CallSource: duet.SourceMCPLite, Method: "tools/call", Tool: req.Name, Outcome: duet.CodeUnauthenticated})
			w.Header().Set("WWW-Authenticate", `Bearer realm="duet"`)
			WriteError(w, http.StatusUnauthorized, duet.CodeUnauthenticated, "no user: the gateway sent neither an SSO-Emp-Id header nor user.empId")
			return
		}
		if _, ok := h.cat.Tool(req.Name); !ok {
			h.cat.Audit(&duet.AuditRecord{Time: time.Now(), TraceID: caller.TraceID, CallSource: duet.SourceMCPLite, Caller: caller.UserID, Method: "tools/call", Tool: req.Name, Outcome: duet.CodeNotFound})
			WriteError(w, http.StatusNotFound, duet.CodeNotFound, "unknown tool "+req.Name)
			return
		}
		release, err := h.cat.Acquire(caller.UserID)
		if err != nil {
			h.cat.Audit(&duet.AuditRecord{Time: time.Now(), TraceID: caller.TraceID, CallSource: duet.SourceMCPLite, Caller: caller.UserID, Method: "tools/call", Tool: req.Name, Outcome: duet.ErrorCode(err)})
			w.Header().Set("Retry-After", "1")
			WriteError(w, http.StatusTooManyRequests, duet.ErrorCode(err), duet.ErrorMessage(err))
			return
		}
		defer release()
		res, err := h.cat.Call(catalog.WithSlot(r.Context()), catalog.Request{Caller: caller, Tool: req.Name, Args: req.Arguments})
		if err != nil {
			WriteError(w, http.StatusNotFound, duet.CodeNotFound, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, Response(res, caller.TraceID))
	}
}

// Response converts a catalog result to MCP-Lite's wire form.
func Response(res *catalog.Result, traceID string) CallResponse {
	return CallResponse{
		Meta:              map[string]any{mcpserver.TraceMetaKey: traceID},
		Content:           []mcp.Content{&mcp.TextContent{Text: res.Text}},
		StructuredContent: res.Structured,
		IsError:           res.IsError,
	}
}
