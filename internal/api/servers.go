package api

import (
	"context"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/mcpclient"
)

// ServerView is a registration as the API shows it: never a credential
// value, only the names of the headers sent.
type ServerView struct {
	Name            string     `json:"name"`
	Owner           string     `json:"owner"`
	ServerKey       string     `json:"serverKey" jsonschema:"fingerprint of the normalized URL; the same for everyone who registers that address"`
	URL             string     `json:"url"`
	HeaderNames     []string   `json:"headerNames" jsonschema:"headers sent with every request (their values are sealed in the vault and never shown)"`
	Auth            string     `json:"auth,omitempty"`
	Status          string     `json:"status" jsonschema:"synced, or not-synced"`
	Transport       string     `json:"transport,omitempty"`
	ProtocolVersion string     `json:"protocolVersion,omitempty"`
	ServerName      string     `json:"serverName,omitempty"`
	ServerVersion   string     `json:"serverVersion,omitempty"`
	ToolCount       int        `json:"toolCount"`
	CatalogHash     string     `json:"catalogHash,omitempty" jsonschema:"sha256 of the archived catalog"`
	SyncedAt        *time.Time `json:"syncedAt,omitempty"`
	CreatedAt       time.Time  `json:"createdAt"`
}

// ServerDetail is a registration with its archived tools.
type ServerDetail struct {
	Server ServerView      `json:"server"`
	Tools  []*duet.MCPTool `json:"tools"`
	// AuthStatus says what an OAuth registration's authorization holds
	// (never a secret); absent for static headers.
	AuthStatus *mcpclient.AuthStatus `json:"authStatus,omitempty" jsonschema:"an OAuth registration's authorization: scopes, expiry, client, issuer (never a secret)"`
}

func serverView(s *duet.MCPServer) ServerView {
	v := ServerView{Name: s.Name, Owner: s.Owner, ServerKey: s.ServerKey, CatalogHash: s.CatalogHash, URL: s.URL, HeaderNames: nonNil(s.HeaderNames), Auth: s.Auth, Status: "not-synced",
		Transport: s.Transport, ProtocolVersion: s.ProtocolVersion, ServerName: s.ServerName, ServerVersion: s.ServerVersion,
		ToolCount: s.ToolCount, SyncedAt: s.SyncedAt, CreatedAt: s.CreatedAt}
	if s.SyncedAt != nil {
		v.Status = "synced"
	}
	return v
}

// ServerList is the caller's registrations.
type ServerList struct {
	Servers []ServerView `json:"servers"`
}

// ListServers lists the caller's registered MCP servers.
func (s *Service) ListServers(ctx context.Context, c duet.Caller) (ServerList, error) {
	return govern(ctx, s, c, "listServers", nil, func(ctx context.Context) (ServerList, error) {
		list, err := s.d.MCP.Servers(ctx, c.UserID)
		if err != nil {
			return ServerList{}, err
		}
		return ServerList{Servers: catalog.Views(list, serverView)}, nil
	})
}

// Credentials are sent once, when a server is registered, and never
// returned: a bearer token and/or header values.
type Credentials struct {
	BearerToken string            `json:"bearerToken,omitempty" jsonschema:"sent as Authorization: Bearer <token>"`
	Headers     map[string]string `json:"headers,omitempty" jsonschema:"header name to value, sent with every request"`
}

func (cr Credentials) headers() (map[string]string, error) {
	h := map[string]string{}
	for k, v := range cr.Headers {
		h[k] = v
	}
	if t := strings.TrimSpace(cr.BearerToken); t != "" {
		for k := range h {
			if strings.EqualFold(k, "Authorization") {
				return nil, duet.Errorf(duet.CodeInvalidArgument, "give either bearerToken or an Authorization header, not both")
			}
		}
		h["Authorization"] = "Bearer " + t
	}
	return h, nil
}

// RegisterIn registers an MCP server.
type RegisterIn struct {
	Name string `json:"name" jsonschema:"your name for the server (unique among yours)"`
	URL  string `json:"url" jsonschema:"the server's Streamable HTTP (or legacy SSE) endpoint; URLs carrying credentials are refused"`
	Credentials
	// OAuth makes Duet obtain the access tokens from the server's
	// authorization server instead of sending fixed headers.
	OAuth   *OAuthIn `json:"oauth,omitempty" jsonschema:"for a server protected by OAuth 2.1: the grant and the client Duet is at its authorization server (secrets sent once, never returned)"`
	Replace bool     `json:"replace,omitempty" jsonschema:"replace your registration of the same name"`
	NoSync  bool     `json:"noSync,omitempty" jsonschema:"register only: do not contact the server (sync it later with syncServer); an oauth registration is synced by its login"`
}

// OAuthIn is the OAuth configuration of a registration (mcpclient.OAuth).
type OAuthIn struct {
	Grant             string   `json:"grant" jsonschema:"oauth (a person authorizes Duet once: loginServer) or client-credentials (a machine identity)"`
	ClientID          string   `json:"clientId,omitempty" jsonschema:"a client pre-registered at the authorization server"`
	ClientSecret      string   `json:"clientSecret,omitempty" jsonschema:"its secret (confidential clients); needs issuer"`
	PrivateKey        string   `json:"privateKey,omitempty" jsonschema:"a PEM private key (client-credentials with private_key_jwt); needs issuer"`
	ClientMetadataURL string   `json:"clientMetadataUrl,omitempty" jsonschema:"https URL of a client ID metadata document describing Duet (oauth)"`
	Scopes            []string `json:"scopes,omitempty" jsonschema:"scopes to request besides the ones the server asks for"`
	Issuer            string   `json:"issuer,omitempty" jsonschema:"the authorization server the pre-registered client belongs to: its credentials go to no other"`
}

func (o *OAuthIn) config() *mcpclient.OAuth {
	if o == nil {
		return nil
	}
	return &mcpclient.OAuth{Grant: strings.TrimSpace(o.Grant), ClientID: strings.TrimSpace(o.ClientID), ClientSecret: o.ClientSecret, PrivateKey: o.PrivateKey,
		ClientMetadataURL: strings.TrimSpace(o.ClientMetadataURL), Scopes: o.Scopes, Issuer: strings.TrimSpace(o.Issuer)}
}

func (o *OAuthIn) size() int {
	if o == nil {
		return 0
	}
	n := len(o.Grant) + len(o.ClientID) + len(o.ClientSecret) + len(o.PrivateKey) + len(o.ClientMetadataURL) + len(o.Issuer)
	for _, sc := range o.Scopes {
		n += len(sc)
	}
	return n
}

// RegisterServer registers an MCP server for the caller, sealing the
// credentials in the vault, and archives its tool catalog (unless
// in.NoSync, or an OAuth registration a person authorizes first:
// LoginServer syncs it). When the catalog cannot be synced the
// registration is kept and the sync's error returned (fix the cause and
// sync again). Returns INVALID_ARGUMENT, URL_REFUSED, CONFLICT, and the
// MCP_* codes of the sync.
func (s *Service) RegisterServer(ctx context.Context, c duet.Caller, in RegisterIn) (ServerDetail, error) {
	size := len(in.Name) + len(in.URL) + len(in.BearerToken) + in.OAuth.size()
	for k, v := range in.Headers {
		size += len(k) + len(v)
	}
	return governSized(ctx, s, c, "registerServer", size, func(ctx context.Context) (ServerDetail, error) {
		h, err := in.headers()
		if err != nil {
			return ServerDetail{}, err
		}
		defer clear(h)
		oauth := in.OAuth.config()
		if oauth != nil && h["Authorization"] != "" {
			return ServerDetail{}, duet.Errorf(duet.CodeInvalidArgument, "oauth obtains the bearer token itself: give no bearerToken or Authorization header with it")
		}
		reg, err := s.d.MCP.Register(ctx, mcpclient.Registration{Owner: c.UserID, Name: strings.TrimSpace(in.Name), URL: strings.TrimSpace(in.URL), Headers: h,
			OAuth: oauth, Replace: in.Replace})
		if oauth != nil {
			oauth.ClientSecret, oauth.PrivateKey = "", ""
		}
		if err != nil {
			return ServerDetail{}, err
		}
		if !in.NoSync && reg.Auth != duet.AuthOAuth {
			if _, err := s.d.MCP.Sync(ctx, c.UserID, reg.Name); err != nil {
				return ServerDetail{}, err
			}
		}
		return s.serverDetail(ctx, c, reg.Name)
	})
}

func (s *Service) serverDetail(ctx context.Context, c duet.Caller, ref string) (ServerDetail, error) {
	reg, tools, err := s.d.MCP.Server(ctx, c.UserID, ref)
	if err != nil {
		return ServerDetail{}, err
	}
	st, err := s.d.MCP.AuthStatus(ctx, c.UserID, reg.Name)
	if err != nil {
		return ServerDetail{}, err
	}
	return ServerDetail{Server: serverView(reg), Tools: nonNil(tools), AuthStatus: st}, nil
}

// LoginIn says whether to sync after authorizing, and who may be asked.
type LoginIn struct {
	NoSync bool `json:"noSync,omitempty" jsonschema:"authorize only; do not sync the catalog"`
	// Authorizer shows the person the authorization server's page and
	// brings back its answer (the authorization code grant): set only by
	// an in-process caller at the person's terminal (`duet server login`),
	// never read from a wire. Nil: nobody can be asked.
	Authorizer *mcpclient.Authorizer `json:"-"`
}

// LoginServer authorizes Duet to call the caller's OAuth registration ref
// as the caller (mcpclient.Client.Login), then syncs its catalog unless
// in.NoSync. The authorization code grant needs the person at a browser:
// in.Authorizer shows them the authorization server's page and receives its
// redirect, for the login and for the sync after it; the client credentials
// grant needs no one. Returns NOT_FOUND, INVALID_ARGUMENT (not an OAuth
// registration; no one to ask), MCP_AUTH_FAILED and the MCP_* codes of the
// sync.
func (s *Service) LoginServer(ctx context.Context, c duet.Caller, ref string, in LoginIn) (ServerDetail, error) {
	return govern(ctx, s, c, "loginServer", in, func(ctx context.Context) (ServerDetail, error) {
		m := s.d.MCP.Authorizing(in.Authorizer)
		if _, err := m.Login(ctx, c.UserID, ref); err != nil {
			return ServerDetail{}, err
		}
		if !in.NoSync {
			if _, err := m.Sync(ctx, c.UserID, ref); err != nil {
				return ServerDetail{}, err
			}
		}
		return s.serverDetail(ctx, c, ref)
	})
}

// GetServer returns one of the caller's registrations (by name or
// serverKey) with its archived tools. Returns NOT_FOUND.
func (s *Service) GetServer(ctx context.Context, c duet.Caller, ref string) (ServerDetail, error) {
	return govern(ctx, s, c, "getServer", nil, func(ctx context.Context) (ServerDetail, error) {
		return s.serverDetail(ctx, c, ref)
	})
}

// SyncServer archives the server's tool catalog again. Returns NOT_FOUND
// and the MCP_* codes.
func (s *Service) SyncServer(ctx context.Context, c duet.Caller, ref string) (ServerDetail, error) {
	return govern(ctx, s, c, "syncServer", nil, func(ctx context.Context) (ServerDetail, error) {
		if _, err := s.d.MCP.Sync(ctx, c.UserID, ref); err != nil {
			return ServerDetail{}, err
		}
		return s.serverDetail(ctx, c, ref)
	})
}

// RemoveServer deletes the caller's registration, its credential and its
// archived catalog. Returns NOT_FOUND.
func (s *Service) RemoveServer(ctx context.Context, c duet.Caller, ref string) (Empty, error) {
	return govern(ctx, s, c, "removeServer", nil, func(ctx context.Context) (Empty, error) {
		return Empty{}, s.d.MCP.Remove(ctx, c.UserID, ref)
	})
}

// CallIn is a manual tool call.
type CallIn struct {
	Arguments map[string]any `json:"arguments" jsonschema:"the tool's arguments, matching its input schema"`
}

// CallOut is the outcome of a manual tool call: the result as the server
// sent it (credential values scrubbed), the error if the call failed, and
// the invocation record it left.
type CallOut struct {
	Result     *duet.ToolResult `json:"result,omitempty"`
	Error      *ErrorBody       `json:"error,omitempty"`
	Invocation *duet.Invocation `json:"invocation,omitempty"`
}

// ErrorBody is an error as the API returns it.
type ErrorBody struct {
	Code    duet.Code `json:"code"`
	Message string    `json:"message"`
}

// CallTool calls a tool of one of the caller's servers by hand, through
// the one server-side invoke() a running case uses, as the caller with the
// caller's credentials. A failed call is not an error of the operation:
// CallOut.Error says how it failed. Returns NOT_FOUND (no such
// registration).
func (s *Service) CallTool(ctx context.Context, c duet.Caller, ref, toolName string, in CallIn) (CallOut, error) {
	return govern(ctx, s, c, "callTool", in, func(ctx context.Context) (CallOut, error) {
		reg, _, err := s.d.MCP.Server(ctx, c.UserID, ref)
		if err != nil {
			return CallOut{}, err
		}
		trace := c.TraceID
		if trace == "" {
			trace = duet.NewTraceID()
		}
		res, err := s.d.MCP.Invoke(ctx, duet.InvokeRequest{Executor: c.UserID, ServerKey: reg.ServerKey, Tool: toolName,
			Arguments: in.Arguments, Source: c.Source, TraceID: trace})
		// invoke() returns them scrubbed of the caller's credentials.
		out := CallOut{Result: res}
		if err != nil {
			out.Error = &ErrorBody{Code: duet.ErrorCode(err), Message: duet.ErrorMessage(err)}
		}
		s.d.MCP.Flush()
		if recs, ferr := s.d.Store.FindInvocations(ctx, duet.InvocationFilter{Executor: c.UserID, TraceID: trace, Tool: toolName, Limit: 1}); ferr == nil && len(recs) > 0 {
			out.Invocation = recs[0]
		}
		return out, nil
	})
}

// ---- invocation and audit records ----

// RecordsIn selects audit or invocation records, newest first.
type RecordsIn struct {
	User    string    `json:"user,omitempty" jsonschema:"only this caller or executor; administrators only (others see their own)"`
	Tool    string    `json:"tool,omitempty"`
	Method  string    `json:"method,omitempty" jsonschema:"audit only: the MCP method or API operation"`
	Server  string    `json:"server,omitempty" jsonschema:"invocations only: a serverKey"`
	Source  string    `json:"source,omitempty" jsonschema:"only this call source (mcp, mcp-lite, stdio, cli, api, web, agent, engine)"`
	Outcome string    `json:"outcome,omitempty" jsonschema:"OK or an error code"`
	TraceID string    `json:"traceId,omitempty"`
	Since   time.Time `json:"since,omitzero" jsonschema:"only records newer than this"`
	Before  time.Time `json:"before,omitzero" jsonschema:"only records older than this (paging: the time of the last record of the previous page)"`
	Limit   int       `json:"limit,omitempty" jsonschema:"default 100, at most 1000"`
}

// AuditList is a page of audit records.
type AuditList struct {
	Records []*duet.AuditRecord `json:"records"`
	All     bool                `json:"all" jsonschema:"true when the records are everyone's (an administrator)"`
}

// InvocationList is a page of invocation records.
type InvocationList struct {
	Records []*duet.Invocation `json:"records"`
	All     bool               `json:"all"`
}

// whose returns the user whose records c may read: c's own, or anyone's
// (the one in.User names, "" for all) for an administrator. Returns
// PERMISSION_DENIED.
func (s *Service) whose(c duet.Caller, in RecordsIn) (string, bool, error) {
	if s.Admin(c.UserID) {
		return in.User, in.User == "", nil
	}
	if in.User != "" && in.User != c.UserID {
		return "", false, duet.Errorf(duet.CodePermissionDenied, "only administrators (DUET_ADMINS) see other people's records")
	}
	return c.UserID, false, nil
}

// ListAudit returns the caller's audit records (everyone's for an
// administrator), newest first. Returns PERMISSION_DENIED.
func (s *Service) ListAudit(ctx context.Context, c duet.Caller, in RecordsIn) (AuditList, error) {
	return govern(ctx, s, c, "listAudit", in, func(ctx context.Context) (AuditList, error) {
		user, all, err := s.whose(c, in)
		if err != nil {
			return AuditList{}, err
		}
		recs, err := s.d.Store.FindAudit(ctx, duet.AuditFilter{Caller: user, Tool: in.Tool, Method: in.Method, CallSource: duet.CallSource(in.Source),
			Outcome: duet.Code(in.Outcome), TraceID: in.TraceID, Since: in.Since, Until: in.Before, Limit: pageSize(in.Limit, 100, maxRecordsPage)})
		return AuditList{Records: nonNil(recs), All: all}, err
	})
}

// ListInvocations returns the invocation records of the caller's calls
// to MCP servers (everyone's for an administrator), newest first. Returns
// PERMISSION_DENIED.
func (s *Service) ListInvocations(ctx context.Context, c duet.Caller, in RecordsIn) (InvocationList, error) {
	return govern(ctx, s, c, "listInvocations", in, func(ctx context.Context) (InvocationList, error) {
		user, all, err := s.whose(c, in)
		if err != nil {
			return InvocationList{}, err
		}
		key := in.Server
		if key != "" && !strings.HasPrefix(key, "mcp_") {
			reg, _, err := s.d.MCP.Server(ctx, c.UserID, key) // the name of one of the caller's servers
			if err != nil {
				return InvocationList{}, err
			}
			key = reg.ServerKey
		}
		recs, err := s.d.Store.FindInvocations(ctx, duet.InvocationFilter{Executor: user, ServerKey: key, Tool: in.Tool, Source: duet.CallSource(in.Source),
			Outcome: duet.Code(in.Outcome), TraceID: in.TraceID, Since: in.Since, Until: in.Before, Limit: pageSize(in.Limit, 100, maxRecordsPage)})
		return InvocationList{Records: nonNil(recs), All: all}, err
	})
}
