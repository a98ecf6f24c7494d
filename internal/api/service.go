// Package api is Duet's REST API (/api/v1, JSON, described by an OpenAPI
// 3.1 document) and the Service behind it, which the web console
// (internal/webui) uses too. Both are transports, like MCP and MCP-Lite:
// every operation goes through the catalog's governance pipeline —
// identity, concurrency caps, a timeout, size limits and one audit record
// with callSource api or web — and the same ownership rules. The catalog's
// tools (tasks, cases, runs, executions, start a run) are called through
// catalog.Call itself, so a REST or console view of a run is the very
// result an MCP client gets; the other operations (sharing, MCP servers,
// assets, tokens, audit, teams) run inside catalog.Govern.
package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/secret"
	"github.com/duet-test/duet/internal/vault"
)

// MCPClient is the MCP client side the API uses: the registry and the one
// invoke(). *mcpclient.Client is one.
type MCPClient interface {
	Register(ctx context.Context, r mcpclient.Registration) (*duet.MCPServer, error)
	Sync(ctx context.Context, owner, ref string) (*duet.MCPServer, error)
	Servers(ctx context.Context, owner string) ([]*duet.MCPServer, error)
	Server(ctx context.Context, owner, ref string) (*duet.MCPServer, []*duet.MCPTool, error)
	Remove(ctx context.Context, owner, ref string) error
	AuthStatus(ctx context.Context, owner, ref string) (*mcpclient.AuthStatus, error)
	// Authorizing returns the operations that may ask a person through a
	// (nil: nobody) to authorize Duet: a login, and the sync after it.
	Authorizing(a *mcpclient.Authorizer) mcpclient.Authorizing
	// Invoke returns the result and the error scrubbed of the caller's
	// credentials.
	Invoke(ctx context.Context, req duet.InvokeRequest) (*duet.ToolResult, error)
	// Flush writes the invocation records made so far.
	Flush()
}

// Compiler compiles a suite (YAML) as its author user writes it: mcpCall
// server names resolve through user's own registrations.
// files is the suite's folder, where its upload steps read their files
// (nil: the suite has none — a suite sent over REST).
type Compiler func(ctx context.Context, user string, src []byte, name string, files fs.FS) (*duet.Suite, error)

// Deps are what the Service works with.
type Deps struct {
	Catalog   *catalog.Catalog
	Store     duet.Store
	MCP       MCPClient
	Artifacts report.Artifacts
	Compile   Compiler
	// CompileCase compiles one case for a task (SaveCase).
	CompileCase CaseCompiler
	// Admins see everyone's audit and invocation records.
	Admins []string
	// Tokens mints personal access tokens: the plaintext (shown once) and
	// the hash to store (auth.NewToken).
	Tokens func() (plaintext, hash string)
	// NeedsApproval is the engine's rule (engine.NeedsApproval): whether a
	// call of m that author wrote needs executor's approval before it runs
	// with executor's credentials. Nil: every such call does.
	NeedsApproval func(ctx context.Context, executor, author string, m *duet.MCPCallStep) (bool, error)
	// Devices lists the phones of this machine (adb), for ListDevices; nil
	// lists none.
	Devices func(ctx context.Context) ([]Device, error)
	// Generate runs the test agent (GenerateCase); nil: no agent.
	Generate Generator
	// ScheduleChanged, if set, is told that a schedule was made or
	// changed (it wakes this process's scheduler).
	ScheduleChanged func()
	// Keyring loads the master keyring that seals webhook secrets;
	// CheckURL is the network guard's check of a webhook's URL (nil
	// checks nothing); DeliveryMade, if set, is told that a webhook
	// delivery was made (it wakes this process's deliverer).
	Keyring      func() (*vault.Keyring, error)
	CheckURL     func(ctx context.Context, rawURL string) error
	DeliveryMade func()
	// Secrets are the users' vault secrets (${secrets.NAME}); nil: none.
	Secrets *secret.Vault
}

// Service is every operation of the REST API and the console, governed.
type Service struct {
	d Deps
}

// New returns the Service over d.
func New(d Deps) *Service { return &Service{d: d} }

// Admin reports whether user has the administrator role.
func (s *Service) Admin(user string) bool { return slices.Contains(s.d.Admins, user) }

// Catalog returns the catalog the Service governs through.
func (s *Service) Catalog() *catalog.Catalog { return s.d.Catalog }

// govern runs fn as operation op of caller c through the governance
// pipeline (catalog.Govern): the result's size is its JSON encoding's.
func govern[T any](ctx context.Context, s *Service, c duet.Caller, op string, args any, fn func(context.Context) (T, error)) (T, error) {
	argBytes := 0
	if args != nil {
		if b, err := json.Marshal(args); err == nil {
			argBytes = len(b)
		}
	}
	return governSized(ctx, s, c, op, argBytes, fn)
}

// governSized is govern for arguments of argBytes bytes (credentials,
// which are measured, never encoded).
func governSized[T any](ctx context.Context, s *Service, c duet.Caller, op string, argBytes int, fn func(context.Context) (T, error)) (T, error) {
	var out T
	err := s.d.Catalog.Govern(ctx, catalog.Op{Caller: c, Method: op, ArgBytes: argBytes}, func(ctx context.Context) (int, error) {
		v, err := fn(ctx)
		if err != nil {
			return 0, err
		}
		out = v
		b, err := json.Marshal(v)
		if err != nil {
			return 0, fmt.Errorf("encoding the result of %s: %w", op, err)
		}
		return len(b), nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// tool calls a tool of the catalog as c (catalog.Call: the same pipeline,
// validation and views as MCP) and decodes its structured result.
func tool[T any](ctx context.Context, s *Service, c duet.Caller, name string, args any) (T, error) {
	return toolWith[T](ctx, s, catalog.Request{Caller: c, Tool: name}, args)
}

// toolWith is tool for a request with more than a caller and a tool (a
// run's origin).
func toolWith[T any](ctx context.Context, s *Service, req catalog.Request, args any) (T, error) {
	var out T
	name := req.Tool
	raw, err := json.Marshal(args)
	if err != nil {
		return out, duet.WrapError(duet.CodeInvalidArgument, err, "arguments cannot be encoded")
	}
	req.Args = raw
	res, err := s.d.Catalog.Call(ctx, req)
	if err != nil {
		return out, err
	}
	if res.IsError {
		var e struct {
			Error catalog.ErrorBody `json:"error"`
		}
		json.Unmarshal(res.Structured, &e)
		return out, &duet.Error{Code: res.Code, Message: e.Error.Message}
	}
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		return out, fmt.Errorf("decoding the result of %s: %w", name, err)
	}
	return out, nil
}

// Empty is the result of an operation that returns nothing.
type Empty struct{}

// Me is who the caller is.
type Me struct {
	User  string `json:"user"`
	Admin bool   `json:"admin" jsonschema:"true for an administrator (DUET_ADMINS): sees everyone's audit and invocation records"`
}

// Me returns the caller's identity and role.
func (s *Service) Me(ctx context.Context, c duet.Caller) (Me, error) {
	return govern(ctx, s, c, "getMe", nil, func(context.Context) (Me, error) {
		return Me{User: c.UserID, Admin: s.Admin(c.UserID)}, nil
	})
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func itoa(n int) string { return fmt.Sprint(n) }

// nonNil returns list, or an empty list for nil: a list in an answer is
// [] in its JSON, never null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
