// Package mcpclient is Duet's MCP client side: the per-user registry of
// remote MCP servers, their encrypted credentials, catalog sync, and the one
// Invoke through which every caller (CLI, agent, engine, web) calls their
// tools, always as the person who runs the call.
//
// A [Client] keeps one MCP session per (executor, serverKey), reused across
// calls and closed after an idle timeout or by [Client.Close]. Sessions speak
// Streamable HTTP through the go-sdk client (stateful or stateless servers,
// JSON or SSE replies, protocol 2026-07-28 or older) and fall back to the
// legacy HTTP+SSE transport for old servers. Every connection goes through the
// SSRF guard of internal/netguard. When an endpoint answers with something
// that is not MCP (plain JSON, an MCP-Lite endpoint, HTML, a redirect to a
// login page), a raw probe request finds out what it is and the error says so.
//
// Credentials are header values sealed by internal/vault with associated data
// binding them to their owner and serverKey; a registration holds only their
// credentialRef and the header names. Plaintext values live in memory only
// while a session that needs them is open, and never appear in errors, logs or
// invocation records.
//
// The package knows nothing of the command line; see docs/mcp-client.md.
package mcpclient

import (
	"golang.org/x/net/http/httpguts"

	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/textproto"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/calldepth"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/oauthclient"
	"github.com/duet-test/duet/internal/serverkey"
	"github.com/duet-test/duet/internal/vault"
)

// Default limits.
const (
	DefaultCallTimeout = 30 * time.Second
	DefaultIdleTimeout = 5 * time.Minute
)

// Options configure a [Client]. Zero values mean the documented defaults.
type Options struct {
	// Store keeps registrations, catalogs, credentials and invocation
	// records. Required.
	Store duet.MCPClientStore
	// Keyring loads the vault keyring. It is called when a credential is
	// first sealed or opened, and once more when a ciphertext was sealed by a
	// key the loaded keyring lacks (another process rotated the master key).
	// nil means credentials cannot be stored or used: Register with headers
	// and calls to servers with credentials fail with UNAVAILABLE.
	Keyring func() (*vault.Keyring, error)
	// Policy is the SSRF guard every connection goes through. The zero
	// value allows public addresses only.
	Policy netguard.Policy
	// CallTimeout bounds one call, connecting included; 0 means 30s.
	CallTimeout time.Duration
	// IdleTimeout closes a cached session unused for this long; 0 means 5m.
	IdleTimeout time.Duration
	// Transport is the base HTTP transport (TLS settings, pool sizes); its
	// dial hooks and proxy are replaced by the policy's. nil means a clone
	// of http.DefaultTransport.
	Transport *http.Transport
	// WrapTransport, if set, decorates the transport of every request to a
	// registered server (tracing: a span and the W3C traceparent header).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// TraceDomain reports whether a server's host (of its URL: a name or
	// an address, with its port if any) is inside the operator's trace
	// domain: only requests to those carry a traceparent header with the
	// call's trace id. nil means none do: a trace id links the calls of a
	// run, and a third party's server has no use for it.
	TraceDomain func(host string) bool
	// MaxCallDepth is the deepest call in a chain of Duet calls that may go
	// out (internal/calldepth): every request carries the Duet-Call-Depth
	// of its context plus one, and a call beyond this fails with
	// CALL_DEPTH_EXCEEDED; 0 means calldepth.DefaultMax.
	MaxCallDepth int
	// Version is the version of Duet it reports to servers; "" means "dev".
	Version string
	// RecordInterval is how often queued invocation records are stored;
	// 0 means 100ms.
	RecordInterval time.Duration
	// Logger receives warnings (never secrets); nil discards them.
	Logger *slog.Logger
	// CatalogChanged, if set, is told after a sync replaced an archived
	// catalog with a different one (the server's tools changed): the
	// registration, the tools before and after. A contract check
	// (internal/contract) flags the cases the change breaks.
	CatalogChanged func(ctx context.Context, reg *duet.MCPServer, old, new []*duet.MCPTool)
	// Now is the OAuth client's clock: when a token was obtained and
	// expires, when it is renewed, the limits on repeated authorizations,
	// and the time in client assertions and DPoP proofs. nil means
	// time.Now; tests move it instead of sleeping.
	Now func() time.Time
}

// Client is the MCP client side of Duet. It is safe for concurrent use.
type Client struct {
	store    duet.MCPClientStore
	opts     Options
	log      *slog.Logger
	http     *http.Transport // shared pool, guarded by opts.Policy
	records  *recorder
	keys     *vault.Loader
	ctx      context.Context // ends on Close; background work uses it
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	mu       sync.Mutex
	sessions map[sessionKey]*entry
	resync   map[sessionKey]*time.Timer
	oauth    map[sessionKey]*oauthEntry
	closed   bool
	// plans are the compiled Mcp-Param-* header plans of input schemas.
	plans headerPlans
	// oauthHTTP makes the requests to authorization servers: through the
	// SSRF guard, never following redirects.
	oauthHTTP *http.Client
	// credGen moves whenever a credential value this client sends may
	// have changed (new values sealed, an OAuth token renewed or adopted):
	// a session then takes its OAuth handler's values again (scrub.go).
	credGen atomic.Uint64
}

var _ duet.Invoker = (*Client)(nil)

// New returns a Client. Call Close when done.
func New(opts Options) *Client {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxCallDepth <= 0 {
		opts.MaxCallDepth = calldepth.DefaultMax
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		store:    opts.Store,
		opts:     opts,
		log:      log,
		http:     opts.Policy.Transport(opts.Transport),
		records:  newRecorder(opts.Store, opts.RecordInterval, log),
		keys:     vault.NewLoader(opts.Keyring, "credentials cannot be stored or used"),
		ctx:      ctx,
		cancel:   cancel,
		sessions: map[sessionKey]*entry{},
		resync:   map[sessionKey]*time.Timer{},
		oauth:    map[sessionKey]*oauthEntry{},
	}
	c.oauthHTTP = &http.Client{
		Transport:     oauthclient.Transport(c.http),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       opts.CallTimeout,
	}
	c.bg.Add(1)
	go c.reapIdle()
	return c
}

// Close closes every cached session, waits for background catalog syncs and
// stores the queued invocation records.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	for k, t := range c.resync {
		if t.Stop() {
			c.bg.Done() // it will not run
		}
		delete(c.resync, k)
	}
	entries := c.sessions
	c.sessions = map[sessionKey]*entry{}
	c.mu.Unlock()
	c.cancel()
	for _, e := range entries {
		e.close()
	}
	c.bg.Wait()
	c.records.close()
	c.http.CloseIdleConnections()
	return nil
}

// Flush waits until every invocation record queued so far is stored.
func (c *Client) Flush() { c.records.flush() }

// Registration is what a user registers: a server under a name, with
// optional header credentials and optional OAuth.
type Registration struct {
	Owner string
	Name  string
	URL   string
	// Headers are sent with every request to the server, e.g.
	// {"Authorization": "Bearer …"}. Values are sealed in the vault.
	Headers map[string]string
	// OAuth, when set, makes Duet obtain access tokens from the server's
	// authorization server (OAuth 2.1) instead of sending a fixed
	// Authorization header. Its secrets are sealed in the vault.
	OAuth *OAuth
	// Replace lets a registration with the same name be replaced (its
	// credential and archived catalog are dropped).
	Replace bool
	// ServerKey, when set, pins the registration: URL must have that
	// serverKey, or nothing is stored (CONFLICT) and no credential is
	// ever sent (a registration from a team's list).
	ServerKey string
}

// Register stores the owner's registration of a server and seals its header
// values; it does not contact the server (call [Client.Sync] next). The URL is
// normalized and its serverKey computed with internal/serverkey; a host that
// resolves to an address the policy refuses is refused now.
// Returns INVALID_ARGUMENT, URL_REFUSED (credentials in the URL, an address
// the SSRF guard refuses, or OAuth over plain http:// off loopback),
// CONFLICT (also a URL that is not the pinned ServerKey), UNAVAILABLE (no
// keyring).
func (c *Client) Register(ctx context.Context, r Registration) (*duet.MCPServer, error) {
	switch {
	case r.Owner == "":
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a registration needs an owner")
	case strings.TrimSpace(r.Name) == "" || len(r.Name) > 100 || strings.ContainsAny(r.Name, "\r\n\t"):
		return nil, duet.Errorf(duet.CodeInvalidArgument, "a server name is 1 to 100 characters on one line")
	case strings.HasPrefix(r.Name, "mcp_"):
		return nil, duet.Errorf(duet.CodeInvalidArgument, "server names must not start with mcp_ (that prefix is for serverKeys)")
	}
	normalized, err := serverkey.Normalize(r.URL)
	if err != nil {
		return nil, err
	}
	key, err := serverkey.Key(r.URL)
	if err != nil {
		return nil, err
	}
	if r.ServerKey != "" && key != r.ServerKey {
		return nil, duet.Errorf(duet.CodeConflict, "%s is server %s, not %s it was pinned to: not registered", normalized, key, r.ServerKey)
	}
	oauth, err := r.OAuth.Check()
	if err != nil {
		return nil, err
	}
	if oauth != nil {
		// A bearer token must not cross the network in cleartext.
		if err := oauthclient.CheckURL(normalized); err != nil {
			return nil, duet.Errorf(duet.CodeURLRefused, "an OAuth registration needs an https URL: %s", err.Error())
		}
	}
	if err := checkDestination(ctx, c.opts.Policy, normalized); err != nil {
		return nil, err
	}
	headers, err := canonicalHeaders(r.Headers)
	if err != nil {
		return nil, err
	}
	if _, ok := headers["Authorization"]; ok && oauth != nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "an OAuth registration gets its Authorization header from the authorization server; do not register one")
	}
	s := &duet.MCPServer{Owner: r.Owner, Name: strings.TrimSpace(r.Name), URL: normalized, ServerKey: key}
	var cred *duet.Credential
	if len(headers) > 0 || oauth != nil {
		for name := range headers {
			s.HeaderNames = append(s.HeaderNames, name)
		}
		sort.Strings(s.HeaderNames)
		if oauth != nil {
			s.Auth = oauth.Grant
		}
		s.CredentialRef = duet.NewID("cred")
		sealed, err := c.seal(r.Owner, key, &secret{Headers: headers, OAuth: oauth})
		if err != nil {
			return nil, err
		}
		cred = &duet.Credential{Ref: s.CredentialRef, Owner: r.Owner, ServerKey: key, Ciphertext: sealed}
	}
	if r.Replace {
		if old, err := c.store.FindMCPServer(ctx, r.Owner, s.Name); err == nil && old.Name == s.Name {
			s.ID = old.ID
			err := c.store.ReplaceMCPServer(ctx, s, cred)
			c.forget(r.Owner, old.ServerKey)
			if err != nil {
				return nil, c.registered(ctx, s, err)
			}
			return s, nil
		}
	}
	if err := c.store.CreateMCPServer(ctx, s, cred); err != nil {
		return nil, c.registered(ctx, s, err)
	}
	return s, nil
}

// registered names the owner's registration of the same address when err
// is the CONFLICT of registering it a second time under another name.
func (c *Client) registered(ctx context.Context, s *duet.MCPServer, err error) error {
	if duet.ErrorCode(err) != duet.CodeConflict {
		return err
	}
	old, ferr := c.store.FindMCPServer(ctx, s.Owner, s.ServerKey)
	if ferr != nil {
		return err
	}
	if old.Name == s.Name {
		return duet.WrapError(duet.CodeConflict, err, "you registered this address already, as %q (serverKey %s); to change its URL or credentials, register it again with replace", old.Name, old.ServerKey)
	}
	return duet.WrapError(duet.CodeConflict, err, "you registered this address already, as %q (serverKey %s): cases and calls reach it by that registration, "+
		"so use it as it is, replace its credentials by registering it again as %q with replace, or remove %q first to register it as %q",
		old.Name, old.ServerKey, old.Name, old.Name, s.Name)
}

// reservedHeaders are set by the transport and may not be registered.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Accept": true, "Connection": true,
	"Transfer-Encoding": true, "Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Mcp-Method": true, "Mcp-Name": true,
	"Last-Event-Id": true, "Traceparent": true, "Cookie2": true, "Proxy-Authorization": true,
	"Duet-Call-Depth": true,
}

// canonicalHeaders checks header names and values. Messages name headers,
// never values.
func canonicalHeaders(in map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(in))
	for name, v := range in {
		if len(name) > 128 || !httpguts.ValidHeaderFieldName(name) {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "invalid header name %q", name)
		}
		cn := textproto.CanonicalMIMEHeaderKey(name)
		if reservedHeaders[cn] {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "header %s is set by the MCP transport and cannot be registered", cn)
		}
		if strings.TrimSpace(v) == "" {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "the value of header %s is empty", cn)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "the value of header %s contains a line break", cn)
		}
		if _, dup := out[cn]; dup {
			return nil, duet.Errorf(duet.CodeInvalidArgument, "header %s is given twice", cn)
		}
		out[cn] = v
	}
	return out, nil
}

// Servers lists the owner's registrations by name.
func (c *Client) Servers(ctx context.Context, owner string) ([]*duet.MCPServer, error) {
	return c.store.FindMCPServers(ctx, owner)
}

// Server returns the owner's registration (by name or serverKey) and its
// archived tools. Returns NOT_FOUND.
func (c *Client) Server(ctx context.Context, owner, ref string) (*duet.MCPServer, []*duet.MCPTool, error) {
	s, err := c.store.FindMCPServer(ctx, owner, ref)
	if err != nil {
		return nil, nil, err
	}
	tools, err := c.store.FindMCPTools(ctx, s.ID)
	if err != nil {
		return nil, nil, err
	}
	return s, tools, nil
}

// Remove deletes the owner's registration, its credential and catalog, and
// closes the owner's session to it. Returns NOT_FOUND.
func (c *Client) Remove(ctx context.Context, owner, ref string) error {
	s, err := c.store.FindMCPServer(ctx, owner, ref)
	if err != nil {
		return err
	}
	if err := c.store.DeleteMCPServer(ctx, owner, s.ServerKey); err != nil {
		return err
	}
	c.forget(owner, s.ServerKey)
	return nil
}

// Tool returns the owner's registration of serverKey and the archived tool
// (nil when the catalog lacks it). Returns NOT_FOUND when the owner has not
// registered serverKey.
func (c *Client) Tool(ctx context.Context, owner, serverKey, tool string) (*duet.MCPServer, *duet.MCPTool, error) {
	return c.store.FindMCPServerTool(ctx, owner, serverKey, tool)
}

// forget closes and drops the cached session and OAuth state of (owner,
// serverKey).
func (c *Client) forget(owner, serverKey string) {
	k := sessionKey{owner, serverKey}
	c.mu.Lock()
	e := c.sessions[k]
	delete(c.oauth, k)
	c.mu.Unlock()
	if e != nil {
		c.retire(k, e)
	}
}

// reapIdle closes sessions unused for IdleTimeout.
func (c *Client) reapIdle() {
	defer c.bg.Done()
	every := c.opts.IdleTimeout / 2
	if every < time.Second {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		var idle []*entry
		c.mu.Lock()
		for k, e := range c.sessions {
			if e.idleSince(c.opts.IdleTimeout) {
				idle = append(idle, e)
				delete(c.sessions, k)
			}
		}
		c.mu.Unlock()
		for _, e := range idle {
			e.close()
		}
	}
}

var errClosed = errors.New("mcpclient: client closed")
