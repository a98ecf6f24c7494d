// Package lite serves the MCP-Lite REST dialect some company gateways use to
// call providers: POST /mcp/tools/list → {"tools":[…]} and POST
// /mcp/tools/call with {"name","arguments","user":{"empId"}} →
// {"content","structuredContent","isError"}. It is a thin translator onto the
// same catalog call and governance as standard MCP; its tool descriptions are
// the very objects MCP tools/list serves.
package lite

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpserver"
)

// Options configure the MCP-Lite handler.
type Options struct {
	// MaxBodyBytes limits a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// Codes gives the HTTP status of each error code (httpapi.Codes); nil
	// answers every refusal with 500.
	Codes mcpserver.Codes
}

// Handler serves the two MCP-Lite routes.
type Handler struct {
	cat   *catalog.Catalog
	opts  Options
	tools []*mcp.Tool
	list  func() []byte // the tools/list body of a caller who sees every tool, made when first asked for
	// partial holds the bodies without tools some callers may not see
	// (a gray release), by the names hidden.
	partial sync.Map
}

// New returns the MCP-Lite handler over cat.
func New(cat *catalog.Catalog, opts Options) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	h := &Handler{cat: cat, opts: opts}
	for _, t := range cat.Tools() {
		h.tools = append(h.tools, mcpserver.SDKTool(t))
	}
	// The same order as MCP tools/list (the SDK lists tools by name).
	slices.SortFunc(h.tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	h.list = sync.OnceValue(func() []byte { return h.listWithout(nil) })
	return h
}

// listWithout is the tools/list body without the hidden tools; the few
// bodies there are (one per set of hidden tools) are made once.
func (h *Handler) listWithout(hidden map[string]bool) []byte {
	names := make([]string, 0, len(hidden))
	for n := range hidden {
		names = append(names, n)
	}
	slices.Sort(names)
	key := strings.Join(names, ",")
	if b, ok := h.partial.Load(key); ok {
		return b.([]byte)
	}
	var tools []*mcp.Tool
	for _, t := range h.tools {
		if !hidden[t.Name] {
			tools = append(tools, t)
		}
	}
	b, err := json.Marshal(ListResponse{Tools: tools})
	if err != nil {
		panic("lite: encoding the tool list: " + err.Error())
	}
	b = append(b, '\n')
	h.partial.Store(key, b)
	return b
}

// ListResponse is the body of a tools/list answer.
type ListResponse struct {
	Tools []*mcp.Tool `json:"tools"`
}

// CallRequest is the body of a tools/call request. Keys are matched
// exactly (see ParseCall).
type CallRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	User      *User           `json:"user,omitempty"`
}

// User is the user field a gateway injects into a tools/call body. Other
// members (the gateway's extension fields) are ignored.
type User struct {
	EmpID string `json:"empId"`
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

// refuse audits a refused request and answers it.
func (h *Handler) refuse(w http.ResponseWriter, op catalog.Op, err error) {
	h.answer(w, h.cat.Refuse(op, err))
}

// answer writes a refusal the catalog already audited.
func (h *Handler) answer(w http.ResponseWriter, err error) {
	code := duet.ErrorCode(err)
	status := http.StatusInternalServerError
	if h.opts.Codes != nil {
		status = h.opts.Codes.Status(code)
	}
	switch code {
	case duet.CodeUnauthenticated:
		w.Header().Set("WWW-Authenticate", `Bearer realm="duet"`)
		w.Header().Set("Connection", "close")
	case duet.CodeRateLimited:
		w.Header().Set("Retry-After", "1")
	}
	WriteError(w, status, code, duet.ErrorMessage(err))
}

// List serves POST /mcp/tools/list, governed like every call (it needs a
// user, as MCP tools/list does).
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	caller, _ := duet.CallerFromContext(r.Context())
	caller.Source = duet.SourceMCPLite
	body := h.list()
	err := h.cat.Govern(r.Context(), catalog.Op{Caller: caller, Method: "tools/list"}, func(ctx context.Context) (int, error) {
		// Tools released gradually are listed only to their users.
		if hidden := h.cat.Hidden(ctx, caller.UserID); len(hidden) > 0 {
			body = h.listWithout(hidden)
		}
		return len(body), nil
	})
	if err != nil {
		h.answer(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// Call serves POST /mcp/tools/call. The caller comes from the request
// context, which the auth middleware filled in; identity reports how the
// request authenticated. The body's user.empId names the user only on a
// request with a valid gateway key (the gateway injects it), under the rule
// of Identify.
func (h *Handler) Call(identity func(*http.Request) auth.Identity) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller, _ := duet.CallerFromContext(r.Context())
		caller.Source = duet.SourceMCPLite
		op := catalog.Op{Caller: caller, Method: "tools/call"}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				op.ArgBytes = int(mbe.Limit)
				h.refuse(w, op, duet.Errorf(duet.CodeTooLarge, "the request body exceeds the limit of %d bytes", h.opts.MaxBodyBytes))
				return
			}
			h.refuse(w, op, duet.Errorf(duet.CodeInvalidArgument, "cannot read the request body"))
			return
		}
		op.ArgBytes = len(body)
		req, err := ParseCall(body)
		if err != nil {
			h.refuse(w, op, err)
			return
		}
		op.Name = req.Name
		user, err := Identify(identity(r), req.User)
		if err != nil {
			h.refuse(w, op, err)
			return
		}
		op.Caller.UserID = user
		if _, ok := h.cat.Tool(req.Name); !ok {
			h.refuse(w, op, duet.Errorf(duet.CodeNotFound, "unknown tool %q", req.Name))
			return
		}
		slot, err := h.cat.Admit(op)
		if err != nil {
			h.answer(w, err)
			return
		}
		defer slot.Release()
		res, err := h.cat.Call(r.Context(), catalog.Request{Caller: op.Caller, Tool: req.Name, Args: req.Arguments, Slot: slot})
		if err != nil {
			WriteError(w, http.StatusNotFound, duet.CodeNotFound, "unknown tool "+req.Name)
			return
		}
		writeJSON(w, http.StatusOK, Response(res, op.Caller.TraceID))
	}
}

// ParseCall reads a tools/call body strictly: one JSON value that RFC 7493
// accepts (valid UTF-8, no duplicate key at any depth — a parser that lets
// the first or the last win cannot be told apart), keys matched exactly,
// and a key that differs from name, arguments, user or user.empId only in
// case refused rather than ignored. Other keys are ignored (gateways add
// extension fields). Returns INVALID_ARGUMENT.
func ParseCall(body []byte) (*CallRequest, error) {
	if err := strictJSON(body); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, `the body must be a JSON object {"name", "arguments"}`)
	}
	if err := exactKeys(top, "", "name", "arguments", "user"); err != nil {
		return nil, err
	}
	req := &CallRequest{Arguments: top["arguments"]}
	if raw, ok := top["name"]; ok {
		if err := json.Unmarshal(raw, &req.Name); err != nil {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "name must be a string")
		}
	}
	if req.Name == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "name is required")
	}
	if raw, ok := top["user"]; ok && string(raw) != "null" {
		var u map[string]json.RawMessage
		if err := json.Unmarshal(raw, &u); err != nil {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "user must be an object")
		}
		if err := exactKeys(u, "user.", "empId"); err != nil {
			return nil, err
		}
		req.User = &User{}
		if raw, ok := u["empId"]; ok {
			if err := json.Unmarshal(raw, &req.User.EmpID); err != nil {
				return nil, duet.Errorf(duet.CodeInvalidArgument, "user.empId must be a string")
			}
		}
	}
	return req, nil
}

// strictJSON accepts one JSON value that RFC 7493 allows: valid UTF-8, no
// lone surrogate, no duplicate key at any depth.
func strictJSON(body []byte) error {
	if !jsontext.Value(body).IsValid() {
		return duet.Errorf(duet.CodeInvalidArgument, "the body is not one valid JSON value (RFC 7493: UTF-8, no duplicate keys)")
	}
	return nil
}

// exactKeys refuses a key of m that matches one of known only when case is
// ignored.
func exactKeys(m map[string]json.RawMessage, prefix string, known ...string) error {
	for k := range m {
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				return duet.Errorf(duet.CodeInvalidArgument, "unknown key %s%.40q: keys are case-sensitive (did you mean %s%s?)", prefix, k, prefix, want)
			}
		}
	}
	return nil
}

// Identify applies MCP-Lite's identity rule to an authenticated request and
// the body's user field, and returns the user the call acts for:
//
//   - without a valid gateway key (a personal token), the body's user is
//     ignored: the token's user acts;
//   - with a gateway key, user.empId must be a valid user id (the rule of
//     the SSO-Emp-Id header, duet.ValidUserID), else UNAUTHENTICATED;
//   - the SSO-Emp-Id header and user.empId both present and different →
//     IDENTITY_MISMATCH; the same, or only one of them → that user;
//   - neither (and no DUET_GATEWAY_FIXED_USER) → UNAUTHENTICATED.
//
// An empty user.empId counts as absent.
func Identify(id auth.Identity, user *User) (string, error) {
	if !id.ViaGateway || user == nil || user.EmpID == "" {
		if id.UserID == "" {
			return "", duet.Errorf(duet.CodeUnauthenticated, "no user: the gateway sent neither an %s header nor user.empId", auth.HeaderUser)
		}
		return id.UserID, nil
	}
	if err := duet.ValidUserID(user.EmpID); err != nil {
		return "", duet.Errorf(duet.CodeUnauthenticated, "invalid user.empId: %s", duet.ErrorMessage(err))
	}
	if id.Method == auth.MethodGateway && id.UserID != user.EmpID {
		return "", duet.Errorf(duet.CodeIdentityMismatch, "the %s header and user.empId name different users; a request acts for one user", auth.HeaderUser)
	}
	return user.EmpID, nil
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
