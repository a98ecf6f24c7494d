package duet

import (
	"context"
	"encoding/json"
	"time"
)

// MCPServer is one user's registration of a remote MCP server. A
// registration belongs to its owner alone: calls resolve the executor's own
// registration, never anyone else's. It holds no credential, only the names of
// the headers whose values the vault keeps under CredentialRef.
type MCPServer struct {
	ID        string `json:"id"`
	Owner     string `json:"owner"`
	Name      string `json:"name"`      // display name, unique per owner
	URL       string `json:"url"`       // normalized (internal/serverkey)
	ServerKey string `json:"serverKey"` // fingerprint of URL; equal for every user of that address

	// CredentialRef names the encrypted header values ("" when none).
	CredentialRef string `json:"credentialRef,omitempty"`
	// HeaderNames are the names of the headers sent with every request, in
	// canonical form (e.g. Authorization, X-Api-Key); values are in the vault.
	HeaderNames []string `json:"headerNames,omitempty"`
	// Auth is how Duet obtains a token for the server besides the headers:
	// "" (static headers only), AuthOAuth or AuthClientCredentials. The
	// OAuth client configuration and tokens are sealed in the credential.
	Auth string `json:"auth,omitempty"`

	// What the last successful catalog sync found.
	Transport       string     `json:"transport,omitempty"`       // "streamable-http" or "sse" (legacy HTTP+SSE)
	ProtocolVersion string     `json:"protocolVersion,omitempty"` // negotiated
	ServerName      string     `json:"serverName,omitempty"`      // the server's own serverInfo.name
	ServerVersion   string     `json:"serverVersion,omitempty"`
	CatalogHash     string     `json:"catalogHash,omitempty"` // sha256 of the archived tools, hex
	ToolCount       int        `json:"toolCount"`
	SyncedAt        *time.Time `json:"syncedAt,omitempty"`

	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"` // changes whenever the URL or credentials change
}

// Ways of authenticating to a server with OAuth 2.1 (MCPServer.Auth).
const (
	AuthOAuth             = "oauth"              // authorization code + PKCE, as the person
	AuthClientCredentials = "client-credentials" // machine identity
	// AuthEnterprise is enterprise-managed authorization (SEP-990): the
	// person's ID token from the company's identity provider is exchanged
	// there for an identity assertion (ID-JAG, RFC 8693), which the
	// server's authorization server trades for an access token (JWT bearer
	// grant, RFC 7523).
	AuthEnterprise = "enterprise"
)

// Transports an MCPServer can be reached over.
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// MCPTool is one archived tool of a registered server, as its tools/list
// described it. Schemas and annotations are kept as the server sent them.
type MCPTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are the tool's MCP annotations as the server sent them
	// (readOnlyHint, destructiveHint, ...): hints, never guarantees.
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// MCPCatalog is the result of one catalog sync, stored on the registration.
type MCPCatalog struct {
	Transport       string
	ProtocolVersion string
	ServerName      string
	ServerVersion   string
	Hash            string
	SyncedAt        time.Time
	Tools           []*MCPTool
}

// Credential is the encrypted header values of one registration (and, for
// OAuth, the client configuration and tokens). Ciphertext is sealed with
// vault.AAD(Owner, ServerKey), so it opens only for the registration it was
// made for.
type Credential struct {
	Ref        string
	Owner      string
	ServerKey  string
	Ciphertext []byte
	UpdatedAt  time.Time
	// Version counts the writes of the credential: 1 when created, one more
	// with every UpdateCredentials. A write names the version it read and
	// fails with CONFLICT when another writer came first (compare-and-swap).
	Version int64
}

// Invocation is the record every call through the Invoker leaves: who called
// which tool of which server through which door, how it ended and how long it
// took. It holds sizes, never argument or result values.
type Invocation struct {
	ID          int64      `json:"id"`
	Time        time.Time  `json:"time"`
	TraceID     string     `json:"traceId"`
	Executor    string     `json:"executor"`
	Source      CallSource `json:"source"`
	ServerKey   string     `json:"serverKey"`
	Tool        string     `json:"tool"`
	Outcome     Code       `json:"outcome"` // OK or an error code
	DurationUs  int64      `json:"durationUs"`
	ArgBytes    int        `json:"argBytes"`
	ResultBytes int        `json:"resultBytes"`
}

// InvocationFilter selects invocation records, newest first.
type InvocationFilter struct {
	Executor  string
	ServerKey string
	Tool      string
	Source    CallSource
	Outcome   Code
	TraceID   string
	Since     time.Time
	Until     time.Time
	Limit     int // 0 means 100
}

// MCPClientStore keeps MCP server registrations, their archived catalogs,
// encrypted credentials and invocation records.
type MCPClientStore interface {
	// CreateMCPServer stores a new registration and, when cred is not nil,
	// its credential, in one transaction (s.CredentialRef must equal
	// cred.Ref). Returns CONFLICT when the owner already has a server with
	// that name or serverKey, INVALID_ARGUMENT.
	CreateMCPServer(ctx context.Context, s *MCPServer, cred *Credential) error
	// ReplaceMCPServer replaces the URL, key, headers and credential of the
	// owner's registration s.ID in one transaction; the archived catalog is
	// dropped. The old credential is deleted. Returns NOT_FOUND, CONFLICT.
	ReplaceMCPServer(ctx context.Context, s *MCPServer, cred *Credential) error
	// FindMCPServer returns the owner's registration whose name or serverKey
	// is ref. Returns NOT_FOUND.
	FindMCPServer(ctx context.Context, owner, ref string) (*MCPServer, error)
	// FindMCPServers lists the owner's registrations by name.
	FindMCPServers(ctx context.Context, owner string) ([]*MCPServer, error)
	// FindMCPServerTool returns the owner's registration of serverKey and,
	// if its archived catalog has it, the tool (nil otherwise). Returns
	// NOT_FOUND when the owner has not registered serverKey.
	FindMCPServerTool(ctx context.Context, owner, serverKey, tool string) (*MCPServer, *MCPTool, error)
	// DeleteMCPServer deletes the owner's registration (name or serverKey),
	// its credential and its archived catalog. Returns NOT_FOUND.
	DeleteMCPServer(ctx context.Context, owner, ref string) error
	// SaveMCPCatalog replaces the archived catalog of registration id and
	// records the sync on it. Returns NOT_FOUND.
	SaveMCPCatalog(ctx context.Context, id string, cat *MCPCatalog) error
	// FindMCPTools returns the archived tools of registration id by name.
	FindMCPTools(ctx context.Context, id string) ([]*MCPTool, error)

	// FindCredential returns the credential ref. Returns NOT_FOUND.
	FindCredential(ctx context.Context, ref string) (*Credential, error)
	// FindCredentials returns every credential (for key rotation).
	FindCredentials(ctx context.Context) ([]*Credential, error)
	// UpdateCredentials stores new ciphertexts for existing credentials in
	// one transaction, each only if its stored Version is still the one in
	// creds (what a Find returned): a compare-and-swap, so that a writer
	// working from an older read never overwrites a newer write. On success
	// each Version is the new one. Returns NOT_FOUND if one is missing,
	// CONFLICT if one was written since it was read; nothing is written then.
	UpdateCredentials(ctx context.Context, creds []*Credential) error
	// LeaseCredential takes the renewal lease of credential ref for holder,
	// for ttl (measured by the store's clock), unless another holder's lease
	// is still running, and returns the credential as stored now. OAuth
	// tokens are renewed only under the lease, so two processes (or
	// instances) never spend the same refresh token. A holder may take its
	// own lease again. Returns NOT_FOUND, CONFLICT (another holder's lease
	// runs).
	LeaseCredential(ctx context.Context, ref, holder string, ttl time.Duration) (*Credential, error)
	// ReleaseCredential ends holder's lease of credential ref; it does
	// nothing when holder does not hold it (any more).
	ReleaseCredential(ctx context.Context, ref, holder string) error

	// AppendInvocations stores records in one transaction.
	AppendInvocations(ctx context.Context, recs []*Invocation) error
	// FindInvocations returns records matching filter, newest first.
	FindInvocations(ctx context.Context, filter InvocationFilter) ([]*Invocation, error)
}
