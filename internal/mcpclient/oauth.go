package mcpclient

import (
	"context"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/oauthclient"
)

// OAuth configures a registration that authenticates with OAuth 2.1
// (internal/oauthclient): Duet discovers the server's authorization server,
// obtains access tokens there and renews them. See docs/mcp-client.md.
type OAuth = oauthclient.Config

// An Authorizer shows a person the authorization server's page and brings
// back its answer (oauthclient.Authorizer).
type Authorizer = oauthclient.Authorizer

// AuthStatus describes the OAuth authorization of a registration, without
// any secret.
type AuthStatus = oauthclient.Status

// LoopbackListener receives the authorization server's redirect on
// 127.0.0.1 (oauthclient.LoopbackListener).
type LoopbackListener = oauthclient.LoopbackListener

// Authorizing returns the operations of c that may ask a person, through
// a, to authorize Duet or to grant more scopes. The operations of c itself
// ask nobody: where a server wants the person's authorization they fail
// with MCP_AUTH_FAILED asking for `duet server login`. A nil a asks nobody
// either.
func (c *Client) Authorizing(a *Authorizer) Authorizing { return Authorizing{c, a} }

// Authorizing is a [Client] whose operations may ask a person, through its
// Authorizer, to authorize Duet or to grant more scopes: Login runs the
// authorization code flow with it, and the sessions Sync and Invoke open
// are their own (never the cached ones other calls share), with an OAuth
// handler that asks through it; they end with the operation.
type Authorizing struct {
	c *Client
	a *Authorizer
}

// Login is [Client.Login], running the authorization code flow with the
// person for a duet.AuthOAuth registration.
func (x Authorizing) Login(ctx context.Context, owner, ref string) (*AuthStatus, error) {
	return x.c.login(ctx, x.a, owner, ref)
}

// Sync is [Client.Sync] on a session that may ask the person.
func (x Authorizing) Sync(ctx context.Context, owner, ref string) (*duet.MCPServer, error) {
	return x.c.syncRef(ctx, x.a, owner, ref)
}

// Invoke is [Client.Invoke] on a session of its own that may ask the
// person.
func (x Authorizing) Invoke(ctx context.Context, req duet.InvokeRequest) (*duet.ToolResult, error) {
	return x.c.invoke(ctx, x.a, req)
}

// ListenLoopback listens on 127.0.0.1:port (0: a free port) for the
// redirect to http://127.0.0.1:PORT/callback; show is called with each
// authorization URL. Close it when done.
func ListenLoopback(port int, show func(authURL string)) (*LoopbackListener, error) {
	return oauthclient.ListenLoopback(port, show)
}

// AutoApprover returns an Authorizer for authorization servers that approve
// at once without asking anyone (test and conformance servers): it requests
// the authorization URL itself, through the SSRF guard, and takes the code
// from the redirect it answers with.
func (c *Client) AutoApprover() *Authorizer { return oauthclient.AutoApprover(c.oauthHTTP) }

// oauthFor returns the OAuth state of reg, made from sec (read from version
// ver of its credential) when there is none for this version of the
// registration.
func (c *Client) oauthFor(reg *duet.MCPServer, sec *secret, ver int64) *oauthclient.Handler {
	k := sessionKey{reg.Owner, reg.ServerKey}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.oauth[k]; st != nil && st.reg.CredentialRef == reg.CredentialRef && st.reg.UpdatedAt.Equal(reg.UpdatedAt) {
		st.h.Adopt(sec.OAuth, ver)
		return st.h
	}
	st := &oauthEntry{reg: reg, h: oauthclient.NewHandler(sec.OAuth, ver, oauthclient.Options{Store: credStore{c, reg}, HTTP: c.oauthHTTP,
		Context: c.ctx, Timeout: c.opts.CallTimeout, Now: c.opts.Now, Changed: func() { c.credGen.Add(1) }, Logger: c.log,
		Server: reg.ServerKey, Owner: reg.Owner})}
	if !c.closed {
		c.oauth[k] = st
	}
	return st.h
}

// oauthEntry is the OAuth state of one version of a registration.
type oauthEntry struct {
	reg *duet.MCPServer
	h   *oauthclient.Handler
}

// credStore is the OAuth state sealed in the credential of one
// registration, as its oauthclient.Handler keeps it.
type credStore struct {
	c   *Client
	reg *duet.MCPServer
}

func (s credStore) Load(ctx context.Context) (*oauthclient.Secret, int64, error) {
	sec, ver, err := s.c.loadSecret(ctx, s.reg)
	if err != nil {
		return nil, 0, err
	}
	return sec.OAuth, ver, nil
}

func (s credStore) Swap(ctx context.Context, change func(*oauthclient.Secret) bool) (*oauthclient.Secret, int64, error) {
	sec, ver, err := s.c.swapSecret(ctx, s.reg, func(s *secret) bool { return s.OAuth != nil && change(s.OAuth) })
	if err != nil {
		return nil, 0, err
	}
	return sec.OAuth, ver, nil
}

func (s credStore) Lease(ctx context.Context, holder string, ttl time.Duration) (*oauthclient.Secret, int64, error) {
	cred, err := s.c.store.LeaseCredential(ctx, s.reg.CredentialRef, holder, ttl)
	if err != nil {
		return nil, 0, err
	}
	sec, err := s.c.open(s.reg, cred)
	if err != nil {
		s.Release(context.WithoutCancel(ctx), holder) // it expires by itself otherwise
		return nil, 0, err
	}
	return sec.OAuth, cred.Version, nil
}

func (s credStore) Release(ctx context.Context, holder string) error {
	return s.c.store.ReleaseCredential(ctx, s.reg.CredentialRef, holder)
}
