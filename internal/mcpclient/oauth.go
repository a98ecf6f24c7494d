package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/duet-test/duet"
	duetauth "github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/redact"
)

// OAuth configures a registration that authenticates with OAuth 2.1: Duet
// discovers the server's authorization server (protected resource metadata,
// RFC 9728; authorization server metadata, RFC 8414), obtains access tokens
// there and renews them. See docs/mcp-client.md.
type OAuth struct {
	// Grant is duet.AuthOAuth (authorization code with PKCE: the owner
	// authorizes Duet once with [Client.Login], and calls then run as them)
	// or duet.AuthClientCredentials (a machine identity, no person).
	Grant string
	// ClientID and ClientSecret name a client registered with the
	// authorization server beforehand. For duet.AuthOAuth they are optional
	// (without them Duet uses ClientMetadataURL or registers itself
	// dynamically, RFC 7591; ClientSecret is optional for a public client).
	// duet.AuthClientCredentials needs ClientID and either ClientSecret or
	// PrivateKey.
	ClientID     string
	ClientSecret string
	// PrivateKey is a PEM private key (EC P-256 or P-384, RSA, Ed25519) with
	// which a client-credentials client authenticates by a signed JWT
	// (private_key_jwt, RFC 7523) instead of a secret.
	PrivateKey string
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document
	// describing Duet; it is the client id at authorization servers that
	// accept such documents (duet.AuthOAuth only).
	ClientMetadataURL string
	// Scopes are requested in addition to the ones the server asks for.
	Scopes []string
	// Issuer is the authorization server (its issuer identifier, RFC 8414)
	// the pre-registered client ClientID is registered with: Duet sends the
	// client's credentials to no other. It is required with a ClientSecret
	// or a PrivateKey (a secret is bound to its issuer when it is entered,
	// never to whichever authorization server the MCP server names first);
	// for a public client "" means the issuer Duet finds the first time it
	// authorizes is pinned then. With a dynamically registered client it
	// binds the registration to that authorization server too. An https URL
	// (http only for loopback addresses).
	Issuer string

	// Enterprise-managed authorization (duet.AuthEnterprise, SEP-990):
	// IdPIssuer is the company identity provider, where IDToken — the
	// person's OpenID Connect ID token — is exchanged for an identity
	// assertion with the client IdPClientID (and IdPClientSecret, if the
	// provider authenticates its clients). ClientID and ClientSecret are
	// the client at the server's authorization server.
	IdPIssuer       string
	IdPClientID     string
	IdPClientSecret string
	IDToken         string
}

// check validates o and returns the secret it seals (nil for a nil o).
func (o *OAuth) check() (*oauthSecret, error) {
	if o == nil {
		return nil, nil
	}
	bad := func(format string, args ...any) (*oauthSecret, error) {
		return nil, duet.Errorf(duet.CodeInvalidArgument, format, args...)
	}
	for _, s := range []string{o.ClientID, o.ClientSecret, o.IdPClientID, o.IdPClientSecret, o.IDToken} {
		if strings.ContainsAny(s, "\r\n\x00") {
			return bad("the OAuth client id and secret must be one line")
		}
	}
	if o.Grant != duet.AuthEnterprise && (o.IdPIssuer != "" || o.IdPClientID != "" || o.IdPClientSecret != "" || o.IDToken != "") {
		return bad("an identity provider and an ID token are for enterprise-managed authorization (--auth enterprise)")
	}
	for _, s := range o.Scopes {
		if !validScope(s) {
			return bad("an OAuth scope is one word of at most %d printable characters without quotes; got %q", maxScopeLen, sanitize(s, 60))
		}
	}
	if err := checkScopeSet(o.Scopes); err != nil {
		return bad("too many OAuth scopes: %s", err.Error())
	}
	if o.Issuer != "" {
		if err := checkOAuthURL(o.Issuer); err != nil {
			return bad("the issuer: %s", err.Error())
		}
		u, _ := url.Parse(o.Issuer)
		if u.RawQuery != "" || u.Fragment != "" {
			return bad("the issuer is an https URL without query or fragment, like https://auth.example.com")
		}
	}
	if o.HoldsSecret() && o.Issuer == "" {
		return bad("%s", errSecretNeedsIssuer)
	}
	switch o.Grant {
	case duet.AuthOAuth:
		if o.PrivateKey != "" {
			return bad("a private key authenticates a client-credentials client; an oauth registration takes a client secret")
		}
		if o.ClientSecret != "" && o.ClientID == "" {
			return bad("a client secret needs its client id")
		}
		if o.ClientMetadataURL != "" {
			u, err := url.Parse(o.ClientMetadataURL)
			if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" || u.User != nil || u.Fragment != "" {
				return bad("the client metadata document URL must be an https URL with a path, like https://duet.example.com/oauth/client.json")
			}
		}
	case duet.AuthClientCredentials:
		switch {
		case o.ClientID == "":
			return bad("the client credentials grant needs a client id")
		case (o.ClientSecret == "") == (o.PrivateKey == ""):
			return bad("the client credentials grant needs either a client secret or a private key (not both)")
		case o.ClientMetadataURL != "":
			return bad("a client metadata document is for the authorization code flow (--auth oauth)")
		}
		if o.PrivateKey != "" {
			if _, err := parseClientKey(o.PrivateKey); err != nil {
				return bad("the private key: %s", err.Error())
			}
		}
	case duet.AuthEnterprise:
		switch {
		case o.ClientID == "":
			return bad("enterprise-managed authorization needs the client id at the server's authorization server")
		case o.IdPIssuer == "" || o.IdPClientID == "" || o.IDToken == "":
			return bad("enterprise-managed authorization needs the identity provider's issuer, Duet's client id there and the person's ID token")
		case o.PrivateKey != "" || o.ClientMetadataURL != "":
			return bad("enterprise-managed authorization takes a client secret, not a private key or a metadata document")
		}
		if err := checkOAuthURL(o.IdPIssuer); err != nil {
			return bad("the identity provider: %s", err.Error())
		}
	default:
		return bad("OAuth grant %q: want %s, %s or %s", o.Grant, duet.AuthOAuth, duet.AuthClientCredentials, duet.AuthEnterprise)
	}
	return &oauthSecret{Grant: o.Grant, ClientID: o.ClientID, ClientSecret: o.ClientSecret, PrivateKey: o.PrivateKey,
		MetadataURL: o.ClientMetadataURL, Scopes: slices.Clone(o.Scopes), Issuer: strings.TrimSuffix(o.Issuer, "/"),
		IdPIssuer: o.IdPIssuer, IdPClientID: o.IdPClientID, IdPClientSecret: o.IdPClientSecret, IDToken: o.IDToken}, nil
}

// HoldsSecret reports whether o carries a credential of its own at the
// server's authorization server — a client secret or a private key — which
// must therefore be bound to an issuer (Issuer) when it is entered.
func (o *OAuth) HoldsSecret() bool {
	return o != nil && (o.ClientSecret != "" || o.PrivateKey != "")
}

// errSecretNeedsIssuer is why a secret without an issuer is refused, and
// how to find the issuer.
const errSecretNeedsIssuer = "a client secret or private key belongs to the authorization server that issued it: " +
	"name that server with its issuer URL (--issuer URL), the \"issuer\" of its metadata " +
	"(https://AUTH-SERVER/.well-known/oauth-authorization-server), as the console or administrator of that server shows it. " +
	"The MCP server names its authorization server in its protected resource metadata " +
	"(https://HOST/.well-known/oauth-protected-resource/PATH, \"authorization_servers\"): " +
	"give that issuer only if it is the server your client was registered with. Duet sends the secret to no other"

// checkOAuthURL refuses an OAuth URL that would carry tokens or client
// credentials in cleartext: it must be https, or http to a loopback address
// (development and tests).
func checkOAuthURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.User != nil:
		return errors.New("not an absolute URL without user information")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return errors.New("plain http:// would carry OAuth tokens and client credentials in cleartext; use https:// (http is accepted only for loopback addresses, for development)")
	}
	return fmt.Errorf("scheme %q: want https", sanitize(u.Scheme, 20))
}

// isLoopback reports whether host names the loopback interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// Limits of scope lists: what a server may ask for, and what Duet requests
// and keeps. A server that asks for more is refused rather than followed:
// every unattended 401 or 403 would otherwise grow the sealed credential.
const (
	maxScopes     = 50   // scopes in one list (a challenge, the wanted set, a grant)
	maxScopeLen   = 200  // bytes of one scope
	maxScopeBytes = 4096 // bytes of one list, spaces included
)

// validScope reports whether s is a scope-token (RFC 6749 section 3.3:
// printable ASCII without space, '"' and '\') of at most maxScopeLen bytes.
func validScope(s string) bool {
	if s == "" || len(s) > maxScopeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c == '"' || c == '\\' || c > 0x7e {
			return false
		}
	}
	return true
}

// checkScopeSet refuses a scope list longer than the limits.
func checkScopeSet(scopes []string) error {
	n := len(scopes) - 1
	for _, s := range scopes {
		n += len(s)
	}
	switch {
	case len(scopes) > maxScopes:
		return fmt.Errorf("%d scopes; Duet requests and keeps at most %d", len(scopes), maxScopes)
	case n > maxScopeBytes:
		return fmt.Errorf("%d bytes of scopes; Duet requests and keeps at most %d", n, maxScopeBytes)
	}
	return nil
}

// checkChallenge refuses a server's challenge naming absurd scopes: more
// than Duet requests, or malformed ones.
func checkChallenge(scopes []string) error {
	for _, s := range scopes {
		if !validScope(s) {
			return &flowError{msg: "the server's challenge names a malformed scope " + strconvQuote(s) + "; Duet does not request it"}
		}
	}
	if err := checkScopeSet(scopes); err != nil {
		return &flowError{msg: "the server's challenge names " + err.Error() + "; it is not followed"}
	}
	return nil
}

// boundScopes returns the well-formed scopes of s, at most maxScopes of
// them within maxScopeBytes: what Duet keeps of a list it did not choose
// (a grant, the scopes a resource supports).
func boundScopes(s []string) []string {
	var out []string
	n := -1
	for _, sc := range s {
		if len(out) == maxScopes || n+1+len(sc) > maxScopeBytes {
			break
		}
		if sc != "" && len(sc) <= maxScopeLen && !slices.Contains(out, sc) {
			out = append(out, sc)
			n += 1 + len(sc)
		}
	}
	return out
}

// oauthSecret is the OAuth part of a sealed credential: the configuration
// given at registration, and the token obtained since.
type oauthSecret struct {
	Grant        string   `json:"grant"`
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	PrivateKey   string   `json:"privateKey,omitempty"`
	MetadataURL  string   `json:"metadataUrl,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	// Issuer is the authorization server the client is bound to: given at
	// registration, or pinned at the first authorization of a
	// pre-registered client. Its credentials go to no other.
	Issuer string `json:"issuer,omitempty"`
	// Enterprise-managed authorization (SEP-990).
	IdPIssuer       string `json:"idpIssuer,omitempty"`
	IdPClientID     string `json:"idpClientId,omitempty"`
	IdPClientSecret string `json:"idpClientSecret,omitempty"`
	IDToken         string `json:"idToken,omitempty"`

	Token *storedToken `json:"token,omitempty"`
	// DPoPKey is the key (PKCS #8, base64) the tokens of a server that
	// requires DPoP are bound to (dpop.go); made at the first such
	// authorization.
	DPoPKey string `json:"dpopKey,omitempty"`
	// Want are scopes a server asked for since the last authorization; the
	// next Login requests them.
	Want []string `json:"want,omitempty"`
}

// holdsSecret reports whether the registration has a credential of its own
// at the server's authorization server (a client secret or a private key).
func (sec *oauthSecret) holdsSecret() bool {
	return sec.ClientSecret != "" || sec.PrivateKey != ""
}

// checkBound refuses to use a client secret or key bound to no issuer (one
// stored before Duet required the issuer with it): it is sent nowhere.
func (sec *oauthSecret) checkBound() error {
	if sec.holdsSecret() && sec.Issuer == "" {
		return &unboundSecret{}
	}
	return nil
}

// mayReceive refuses a token request to t's token endpoint that the
// client's binding forbids: the registration's own secret or key goes only
// to the token endpoint of its bound issuer, and no request goes to an
// issuer other than the bound one.
func (sec *oauthSecret) mayReceive(t *storedToken) error {
	if sec.holdsSecret() && t.ClientID == sec.ClientID {
		if err := sec.checkBound(); err != nil {
			return err
		}
		return checkIssuer(sec.Issuer, t.Issuer)
	}
	if t.Issuer == "" {
		return nil
	}
	return checkIssuer(sec.Issuer, t.Issuer)
}

// storedToken is an access token with what is needed to renew it.
type storedToken struct {
	Access   string    `json:"access"`
	Type     string    `json:"type,omitempty"`
	Refresh  string    `json:"refresh,omitempty"`
	Expiry   time.Time `json:"expiry,omitzero"`
	Scopes   []string  `json:"scopes,omitempty"` // granted
	Obtained time.Time `json:"obtained"`

	// The client and token endpoint it came from.
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"` // a dynamically registered client's
	TokenURL     string `json:"tokenUrl"`
	AuthStyle    int    `json:"authStyle,omitempty"` // oauth2.AuthStyle
	Issuer       string `json:"issuer,omitempty"`
	Resource     string `json:"resource,omitempty"` // RFC 8707
}

// renewBefore is how long before its expiry a token is renewed (a quarter
// of its lifetime when that is shorter).
const renewBefore = 30 * time.Second

func (t *storedToken) expiring(now time.Time) bool {
	if t.Expiry.IsZero() {
		return false
	}
	lead := min(renewBefore, t.Expiry.Sub(t.Obtained)/4)
	return now.Add(lead).After(t.Expiry)
}

func (t *storedToken) oauth2() *oauth2.Token {
	return &oauth2.Token{AccessToken: t.Access, TokenType: "Bearer", RefreshToken: t.Refresh, Expiry: t.Expiry}
}

// endpoint returns a copy of t without the token itself.
func (t *storedToken) endpoint() *storedToken {
	return &storedToken{ClientID: t.ClientID, ClientSecret: t.ClientSecret, TokenURL: t.TokenURL, AuthStyle: t.AuthStyle,
		Issuer: t.Issuer, Resource: t.Resource}
}

// fill sets the token fields of t from a token endpoint's answer, received
// at now; requested are the scopes asked for (granted when the answer names
// none).
func (t *storedToken) fill(tok *oauth2.Token, requested []string, now time.Time) *storedToken {
	t.Access, t.Type, t.Refresh = tok.AccessToken, tok.TokenType, tok.RefreshToken
	t.Obtained = now.UTC()
	t.Expiry = expiryOf(tok, t.Obtained)
	t.Scopes = requested
	if s, ok := tok.Extra("scope").(string); ok {
		t.Scopes = boundScopes(strings.Fields(s))
	}
	return t
}

// expiryOf is when tok, received at now, expires: now plus its expires_in
// (on the client's clock, not the one golang.org/x/oauth2 read), or the
// expiry oauth2 computed when the answer's expires_in cannot be read; zero
// when it names none.
func expiryOf(tok *oauth2.Token, now time.Time) time.Time {
	var secs float64
	switch v := tok.Extra("expires_in").(type) {
	case float64:
		secs = v
	case int64: // a form-encoded answer
		secs = float64(v)
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return tok.Expiry
		}
		secs = float64(n)
	default:
		return tok.Expiry
	}
	if secs <= 0 {
		return time.Time{}
	}
	return now.Add(time.Duration(secs) * time.Second)
}

// An Authorizer shows a person the authorization server's page and brings
// back its answer: the authorization code flow needs one. Put it in the
// context of a call with [WithAuthorizer]; without one, a call that needs the
// person's authorization fails with MCP_AUTH_FAILED asking them to run
// `duet server login`.
type Authorizer struct {
	// RedirectURL is where the authorization server sends the browser back.
	RedirectURL string
	// Fetch directs the person to the authorization URL and returns the code
	// and state the authorization server redirected back with.
	Fetch auth.AuthorizationCodeFetcher
}

type authorizerKey struct{}

// WithAuthorizer returns ctx carrying a: calls made with it may ask the
// person (through a) to authorize Duet, or to grant more scopes.
func WithAuthorizer(ctx context.Context, a *Authorizer) context.Context {
	return context.WithValue(ctx, authorizerKey{}, a)
}

func authorizerFrom(ctx context.Context) *Authorizer {
	a, _ := ctx.Value(authorizerKey{}).(*Authorizer)
	return a
}

// Limits of authorizations made without being asked (Login always runs).
const (
	maxAuthorizations   = 3           // within authorizationWindow
	authorizationWindow = time.Minute // for each (owner, serverKey)
)

// oauthState is the OAuth client of one (owner, serverKey): it is the
// auth.OAuthHandler of every session to that server, supplies the access
// token, renews it, obtains a new one when the server asks (within limits)
// and keeps it sealed in the registration's credential.
//
// The stored credential is the truth; sec is this process's copy. Every
// change is a compare-and-swap on the stored credential (swapSecret), and a
// token is renewed only from the stored state, re-read under the
// credential's renewal lease, so that neither another session, another
// process nor another instance on the same database loses or undoes a grant:
// a newer token stored since (a renewal elsewhere, a `duet server login`
// while `duet serve` runs) is adopted, never overwritten by an older one, and
// a rotating refresh token is spent once.
type oauthState struct {
	c   *Client
	reg *duet.MCPServer

	authMu   sync.Mutex // one authorization at a time
	recent   []time.Time
	failedAt time.Time // the last authorization failed then, with failed
	failed   error

	mu  sync.Mutex // guards sec and ver; held while renewing
	sec *oauthSecret
	ver int64 // the version of the stored credential sec was read from or written as

	dpop *dpopKey // parsed from sec.DPoPKey
}

// dpopKeyLocked returns the DPoP key of the registration; nil when it has
// none.
func (st *oauthState) dpopKeyLocked() *dpopKey {
	if st.sec == nil || st.sec.DPoPKey == "" {
		return nil
	}
	if st.dpop == nil || st.dpop.stored != st.sec.DPoPKey {
		k, err := parseDPoPKey(st.sec.DPoPKey, st.c.opts.Now)
		if err != nil {
			st.c.log.Warn("the stored DPoP key cannot be read; the next authorization makes another", "server", st.reg.ServerKey, "err", err)
			return nil
		}
		k.stored = st.sec.DPoPKey
		st.dpop = k
	}
	return st.dpop
}

// boundKey returns the key the current token is bound to, or nil for a
// bearer token: MCP requests then carry DPoP proofs (conn.go).
func (st *oauthState) boundKey() *dpopKey {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sec == nil || st.sec.Token == nil || !strings.EqualFold(st.sec.Token.Type, dpopScheme) {
		return nil
	}
	return st.dpopKeyLocked()
}

var _ auth.OAuthHandler = (*oauthState)(nil)

// oauthFor returns the OAuth state of reg, made from sec (read from version
// ver of its credential) when there is none for this version of the
// registration.
func (c *Client) oauthFor(reg *duet.MCPServer, sec *secret, ver int64) *oauthState {
	k := sessionKey{reg.Owner, reg.ServerKey}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.oauth[k]; st != nil && st.reg.CredentialRef == reg.CredentialRef && st.reg.UpdatedAt.Equal(reg.UpdatedAt) {
		st.mu.Lock()
		st.adoptLocked(sec.OAuth, ver)
		st.mu.Unlock()
		return st
	}
	st := &oauthState{c: c, reg: reg, sec: sec.OAuth, ver: ver}
	if !c.closed {
		c.oauth[k] = st
	}
	return st
}

// adoptLocked takes sec, read from version ver of the stored credential,
// when it is newer than what st holds.
func (st *oauthState) adoptLocked(sec *oauthSecret, ver int64) {
	if sec != nil && ver > st.ver {
		st.sec, st.ver = sec, ver
		st.c.credGen.Add(1)
	}
}

// reloadLocked reads the stored credential and adopts it when it is newer.
func (st *oauthState) reloadLocked(ctx context.Context) error {
	sec, ver, err := st.c.loadSecret(ctx, st.reg)
	if err != nil {
		return err
	}
	st.adoptLocked(sec.OAuth, ver)
	return nil
}

// updateLocked applies change to the stored OAuth state by a
// compare-and-swap (change runs on the freshly read state and reports
// whether it changed it) and adopts the result. When the store cannot be
// written the change is kept in this process only (logged): a token just
// obtained must not be lost with it.
func (st *oauthState) updateLocked(ctx context.Context, change func(*oauthSecret) bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	sec, ver, err := st.c.swapSecret(ctx, st.reg, func(s *secret) bool { return s.OAuth != nil && change(s.OAuth) })
	if err == nil && sec.OAuth != nil {
		st.adoptLocked(sec.OAuth, ver)
		return
	}
	if err == nil {
		err = duet.Errorf(duet.CodeInternal, "the OAuth configuration is missing from the credential")
	}
	st.c.log.WarnContext(ctx, "cannot store the OAuth state", "server", st.reg.ServerKey, "owner", st.reg.Owner,
		"code", duet.ErrorCode(err), "err", duet.ErrorMessage(err))
	mem := *st.sec
	mem.Want = slices.Clone(mem.Want)
	if change(&mem) {
		st.sec = &mem
		st.c.credGen.Add(1)
	}
}

type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// TokenSource supplies the access token of every request: the stored one,
// renewed when it is about to expire. No token means no Authorization
// header; the server's 401 then leads to Authorize.
func (st *oauthState) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return tokenFunc(st.token), nil
}

func (st *oauthState) token() (*oauth2.Token, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.sec.Token
	if t == nil {
		return nil, nil
	}
	if !t.expiring(st.c.opts.Now()) {
		return t.oauth2(), nil
	}
	ctx, cancel := context.WithTimeout(st.c.ctx, st.c.opts.CallTimeout)
	defer cancel()
	nt, err := st.renewLocked(ctx, t)
	switch {
	case err != nil:
		return nil, err
	case nt == nil:
		return nil, nil
	}
	return nt.oauth2(), nil
}

// renewableLocked reports whether t can be renewed without a person: with its
// refresh token, or by the client credentials grant again.
func (st *oauthState) renewableLocked(t *storedToken) bool {
	return t.Refresh != "" || st.sec.Grant == duet.AuthClientCredentials && t.TokenURL != ""
}

// renewLocked replaces used, a token about to expire or refused by the
// server, with a usable one. It never renews from this process's copy: it
// re-reads the stored credential and uses a newer token stored since
// (another session, process or login got one); otherwise it takes the
// credential's renewal lease (waiting while another process renews), reads
// the stored state again under it and renews that token — with its refresh
// token, or by the client credentials grant again — then stores the result
// by a compare-and-swap that keeps a newer grant stored meanwhile. It
// returns nil when there is no token to renew, or when the authorization
// server no longer honours the grant (the token is dropped, unless a newer
// one replaced it: authorize again).
func (st *oauthState) renewLocked(ctx context.Context, used *storedToken) (*storedToken, error) {
	const op = "renewing the access token"
	fresh := func() *storedToken {
		if t := st.sec.Token; t != nil && t.Access != used.Access && !t.expiring(st.c.opts.Now()) {
			return t
		}
		return nil
	}
	if err := st.reloadLocked(ctx); err != nil {
		return nil, st.flowErrorLocked(op, err, nil)
	}
	if t := fresh(); t != nil {
		return t, nil
	}
	if st.sec.Token == nil || !st.renewableLocked(st.sec.Token) {
		return nil, nil
	}
	t, release, err := st.leaseLocked(ctx, fresh)
	if err != nil || t != nil {
		return t, err
	}
	defer release()
	if t := fresh(); t != nil {
		return t, nil
	}
	cur := st.sec.Token
	if cur == nil || !st.renewableLocked(cur) {
		return nil, nil
	}
	sec := *st.sec
	rctx, refused := withRefusals(ctx)
	var nt *storedToken
	if cur.Refresh != "" {
		nt, err = st.refresh(rctx, &sec, cur)
	} else {
		var tok *oauth2.Token
		tok, err = st.tokenRequest(rctx, &sec, cur, cur.Scopes, nil)
		if err == nil {
			nt = cur.endpoint().fill(tok, cur.Scopes, st.c.opts.Now())
		}
	}
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
			st.c.log.WarnContext(ctx, "the authorization server no longer accepts the stored grant; authorization is needed again",
				"server", st.reg.ServerKey, "owner", st.reg.Owner, "error", sanitize(re.ErrorCode, 60))
			// Drop the refused token only: a newer grant stored meanwhile
			// (a login) stays.
			st.updateLocked(ctx, func(o *oauthSecret) bool {
				if o.Token == nil || o.Token.Access != cur.Access {
					return false
				}
				o.Token = nil
				return true
			})
			return fresh(), nil
		}
		return nil, st.flowErrorLocked(op, err, refused)
	}
	st.updateLocked(ctx, func(o *oauthSecret) bool {
		if o.Token != nil && o.Token.Access != cur.Access {
			return false // a newer grant was stored meanwhile: it wins
		}
		o.Token = nt
		return true
	})
	if t := st.sec.Token; t != nil && !t.expiring(st.c.opts.Now()) {
		return t, nil
	}
	return nt, nil
}

// leaseLocked takes the renewal lease of the registration's credential and
// adopts the stored state it returns; release ends the lease. While another
// process holds the lease it waits, re-reading the stored state, and returns
// the token fresh finds there as soon as there is one (release is nil then).
func (st *oauthState) leaseLocked(ctx context.Context, fresh func() *storedToken) (t *storedToken, release func(), err error) {
	const op = "renewing the access token"
	holder := duet.NewID("renew")
	wait := 20 * time.Millisecond
	for {
		cred, err := st.c.store.LeaseCredential(ctx, st.reg.CredentialRef, holder, 2*st.c.opts.CallTimeout)
		if err == nil {
			release := func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := st.c.store.ReleaseCredential(ctx, st.reg.CredentialRef, holder); err != nil {
					st.c.log.WarnContext(ctx, "cannot release the renewal lease (it expires by itself)", "server", st.reg.ServerKey,
						"owner", st.reg.Owner, "code", duet.ErrorCode(err), "err", duet.ErrorMessage(err))
				}
			}
			sec, err := st.c.open(st.reg, cred)
			if err != nil {
				release()
				return nil, nil, st.flowErrorLocked(op, err, nil)
			}
			st.adoptLocked(sec.OAuth, cred.Version)
			return nil, release, nil
		}
		if duet.ErrorCode(err) != duet.CodeConflict {
			return nil, nil, st.flowErrorLocked(op, err, nil)
		}
		// Another process is renewing this token: wait for its result.
		select {
		case <-ctx.Done():
			return nil, nil, &flowError{msg: op + ": another process was still renewing it", err: ctx.Err()}
		case <-time.After(wait):
		}
		wait = min(2*wait, 250*time.Millisecond)
		if err := st.reloadLocked(ctx); err != nil {
			return nil, nil, st.flowErrorLocked(op, err, nil)
		}
		if t := fresh(); t != nil {
			return t, nil, nil
		}
	}
}

// refresh uses t's refresh token.
func (st *oauthState) refresh(ctx context.Context, sec *oauthSecret, t *storedToken) (*storedToken, error) {
	params := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.Refresh}}
	if strings.EqualFold(t.Type, dpopScheme) {
		// A DPoP-bound token is renewed with a proof of the same key.
		ctx = withDPoP(ctx, st.dpopKeyLocked())
	}
	tok, err := st.tokenRequest(ctx, sec, t, nil, params)
	if err != nil {
		return nil, err
	}
	nt := t.endpoint().fill(tok, t.Scopes, st.c.opts.Now())
	if nt.Refresh == "" {
		nt.Refresh = t.Refresh // not rotated
	}
	return nt, nil
}

// tokenRequest asks t's token endpoint for a token: the client credentials
// grant unless params name another grant_type. The resource (RFC 8707) is
// always sent; a private key signs a client assertion. A client bound to an
// issuer sends nothing to a token endpoint of another.
func (st *oauthState) tokenRequest(ctx context.Context, sec *oauthSecret, t *storedToken, scopes []string, params url.Values) (*oauth2.Token, error) {
	if err := sec.mayReceive(t); err != nil {
		return nil, err
	}
	if params == nil {
		params = url.Values{}
	}
	if t.Resource != "" {
		params.Set("resource", t.Resource)
	}
	cfg := clientcredentials.Config{ClientID: t.ClientID, ClientSecret: t.ClientSecret, TokenURL: t.TokenURL,
		Scopes: scopes, AuthStyle: oauth2.AuthStyle(t.AuthStyle), EndpointParams: params}
	if sec.PrivateKey != "" && t.ClientID == sec.ClientID {
		key, err := parseClientKey(sec.PrivateKey)
		if err != nil {
			return nil, err
		}
		aud := t.Issuer
		if aud == "" {
			aud = t.TokenURL
		}
		a, err := key.assertion(t.ClientID, aud, st.c.opts.Now())
		if err != nil {
			return nil, err
		}
		params.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		params.Set("client_assertion", a)
		cfg.ClientSecret, cfg.AuthStyle = "", oauth2.AuthStyleInParams
	}
	return cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, st.c.oauthHTTP))
}

// Authorize is called by the transport when the server answered 401 or 403.
// In order: a challenge naming absurd scopes is refused; a token newer than
// the one the request carried (another session or process got it) is simply
// used; a 401 with a refresh token renews; otherwise Duet authorizes again:
// the client credentials grant, or the authorization code flow when the
// context carries an [Authorizer] — within limits. Without an Authorizer it
// fails asking for `duet server login`, remembering the scopes the server
// asked for.
func (st *oauthState) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("Www-Authenticate"))
	scopes := challengeScopes(challenges)
	if resp.StatusCode == http.StatusForbidden && challengeParam(challenges, "error") != "insufficient_scope" {
		return &flowError{msg: "the server refused the access token (403 Forbidden without an insufficient_scope challenge); authorizing again would not help"}
	}
	if err := checkChallenge(scopes); err != nil {
		return err
	}
	st.authMu.Lock()
	defer st.authMu.Unlock()
	sent := bearerOf(req)
	st.mu.Lock()
	if err := st.reloadLocked(ctx); err != nil {
		st.mu.Unlock()
		return st.flowError("reading the stored token", err, nil)
	}
	cur := st.sec.Token
	st.mu.Unlock()
	if cur != nil && cur.Access != sent && !cur.expiring(st.c.opts.Now()) && (resp.StatusCode == http.StatusUnauthorized || covers(cur.Scopes, scopes)) {
		return nil
	}
	if resp.StatusCode == http.StatusUnauthorized && cur != nil && cur.Access == sent && cur.Refresh != "" {
		// The token may have been revoked before its expiry.
		st.mu.Lock()
		nt, err := st.renewLocked(ctx, cur)
		st.mu.Unlock()
		if err == nil && nt != nil {
			return nil
		}
	}
	if resp.StatusCode == http.StatusForbidden && cur != nil && cur.Access == sent && covers(cur.Scopes, scopes) {
		return &flowError{msg: fmt.Sprintf("the server still answers insufficient_scope for %s, which the token was granted; authorizing again would not help", scopeList(scopes))}
	}
	now := st.c.opts.Now()
	if st.failed != nil && now.Sub(st.failedAt) < retryFailedAfter {
		// The go-sdk tries the older handshake after a failed one: do not
		// ask the person again at once.
		return st.failed
	}
	st.recent = slices.DeleteFunc(st.recent, func(t time.Time) bool { return now.Sub(t) > authorizationWindow })
	if len(st.recent) >= maxAuthorizations {
		return &flowError{msg: fmt.Sprintf("gave up after %d authorizations within %s", len(st.recent), authorizationWindow)}
	}
	err := st.authorize(ctx, req, resp, challenges, scopes)
	var fe *flowError
	if errors.As(err, &fe) && ctx.Err() == nil {
		st.failed, st.failedAt = err, now
	} else {
		st.failed = nil
	}
	return err
}

// retryFailedAfter is how long a failed authorization is not tried again
// (Login always tries).
const retryFailedAfter = 10 * time.Second

// authorize obtains a new token. The caller holds authMu.
func (st *oauthState) authorize(ctx context.Context, req *http.Request, resp *http.Response, challenges []oauthex.Challenge, scopes []string) error {
	st.mu.Lock()
	grant, granted, want := st.sec.Grant, st.grantedLocked(), st.sec.Want
	unbound := st.sec.checkBound()
	st.mu.Unlock()
	if unbound != nil {
		return unbound
	}
	a := authorizerFrom(ctx)
	if grant == duet.AuthOAuth && a == nil {
		wanted := union(want, scopes)
		if err := checkScopeSet(wanted); err != nil {
			return &flowError{msg: "the server asks for more scopes than Duet keeps for the next login (" + err.Error() + ")"}
		}
		if len(wanted) != len(want) {
			st.mu.Lock()
			st.updateLocked(ctx, func(o *oauthSecret) bool {
				u := union(o.Want, scopes)
				if len(u) == len(o.Want) || checkScopeSet(u) != nil {
					return false
				}
				o.Want = u
				return true
			})
			wanted = union(st.sec.Want, scopes)
			st.mu.Unlock()
		}
		return &loginRequired{scopes: wanted}
	}
	st.recent = append(st.recent, st.c.opts.Now())
	ctx, refused := withRefusals(ctx)
	if requiresDPoP(challenges) {
		// The server wants sender-constrained tokens: bind the new one
		// to the registration's key (made now if it has none).
		st.mu.Lock()
		if st.sec.DPoPKey == "" {
			_, stored, err := newDPoPKey(st.c.opts.Now)
			if err != nil {
				st.mu.Unlock()
				return st.flowError("making a DPoP key", err, nil)
			}
			st.updateLocked(ctx, func(o *oauthSecret) bool {
				if o.DPoPKey != "" {
					return false
				}
				o.DPoPKey = stored
				return true
			})
		}
		k := st.dpopKeyLocked()
		st.mu.Unlock()
		ctx = withDPoP(ctx, k)
	}
	var t *storedToken
	var err error
	if grant == duet.AuthClientCredentials {
		t, err = st.clientCredentials(ctx, req.URL.String(), challenges, union(granted, scopes))
	} else if grant == duet.AuthEnterprise {
		t, err = st.enterprise(ctx, req.URL.String(), challenges, union(granted, scopes))
	} else {
		t, err = st.authorizationCode(ctx, a, req, resp, challenges, union(granted, want))
	}
	if err != nil {
		return st.flowError("authorizing", err, refused)
	}
	// A new grant replaces whatever is stored: it is the newest.
	st.mu.Lock()
	st.updateLocked(ctx, func(o *oauthSecret) bool {
		o.Token = t
		o.Want = slices.DeleteFunc(slices.Clone(o.Want), func(s string) bool { return slices.Contains(t.Scopes, s) })
		if o.Issuer == "" && o.ClientID != "" && t.Issuer != "" {
			o.Issuer = strings.TrimSuffix(t.Issuer, "/") // pinned: the pre-registered client's credentials go to no other
		}
		return true
	})
	st.mu.Unlock()
	return nil
}

func (st *oauthState) grantedLocked() []string {
	if st.sec.Token == nil {
		return nil
	}
	return st.sec.Token.Scopes
}

// issuerMismatch says the server named an authorization server other than
// the one the registration's client is bound to. Nothing was sent to it.
type issuerMismatch struct {
	bound, found string
}

func (e *issuerMismatch) Error() string {
	return fmt.Sprintf("%s is not %s, which the client is bound to", e.named(), strconvQuote(e.bound))
}

// unboundSecret says the registration's client secret or key is bound to
// no issuer (it was stored before Duet required one): it is sent nowhere.
type unboundSecret struct{}

func (*unboundSecret) Error() string {
	return "the client secret or key is bound to no authorization server; it is sent to none"
}

// named names the authorization server found (outside text, sanitized).
func (e *issuerMismatch) named() string {
	if e.found == "" {
		return "another authorization server"
	}
	return "the authorization server " + strconvQuote(e.found)
}

// checkIssuer refuses issuer found when the client is bound to another.
func checkIssuer(bound, found string) error {
	if bound == "" || strings.TrimSuffix(bound, "/") == strings.TrimSuffix(found, "/") {
		return nil
	}
	return &issuerMismatch{bound: bound, found: found}
}

// discoverAuthServer finds the authorization server the MCP endpoint
// resourceURL names now: its protected resource metadata, then the
// authorization server's metadata (the fixed endpoints of 2025-03-26 when it
// has none).
func discoverAuthServer(ctx context.Context, hc *http.Client, challenges []oauthex.Challenge, resourceURL string) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, error) {
	prm, err := discoverResource(ctx, hc, challenges, resourceURL)
	if err != nil {
		return nil, nil, err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], hc)
	if err != nil {
		return nil, nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		// 2025-03-26: the endpoints are at fixed paths.
		as := strings.TrimSuffix(prm.AuthorizationServers[0], "/")
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], AuthorizationEndpoint: as + "/authorize",
			TokenEndpoint: as + "/token", RegistrationEndpoint: as + "/register"}
	}
	return prm, asm, nil
}

// sdkIssuerMismatch is how the go-sdk says a pre-registered client's issuer
// differs from the authorization server it discovered.
const sdkIssuerMismatch = "does not match pre-registered credentials issuer"

// authorizationCode runs the authorization code flow with PKCE through the
// go-sdk's handler: discovery, client registration (a client ID metadata
// document, the pre-registered client, or dynamic registration, in that
// order), the person's consent through a, and the code exchange. extra are
// scopes requested besides the ones the server asks for. A pre-registered
// client (or a registration bound to an issuer) first finds the
// authorization server the server names and refuses one other than the
// client's issuer before anything is sent to it.
func (st *oauthState) authorizationCode(ctx context.Context, a *Authorizer, req *http.Request, resp *http.Response, challenges []oauthex.Challenge, extra []string) (*storedToken, error) {
	st.mu.Lock()
	sec := *st.sec
	st.mu.Unlock()
	var issuer string
	if sec.ClientID != "" || sec.Issuer != "" {
		_, asm, err := discoverAuthServer(ctx, st.c.oauthHTTP, challenges, req.URL.String())
		if err != nil {
			return nil, err
		}
		if err := checkIssuer(sec.Issuer, asm.Issuer); err != nil {
			return nil, err
		}
		issuer = asm.Issuer
	}
	var resource string
	var got *storedToken
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: a.RedirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if u, err := url.Parse(args.URL); err == nil {
				resource = u.Query().Get("resource")
			}
			return a.Fetch(ctx, args)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: registrationMetadata(a.RedirectURL)},
		ScopeFilter: func(discovered []string) []string {
			// What a resource's metadata lists is bounded; a challenge's
			// scopes were checked.
			return union(union(boundScopes(discovered), sec.Scopes), extra)
		},
		RequestRefreshToken: true,
		// A matching iss (RFC 9207) is accepted even when the metadata
		// does not advertise it; a different one is always refused.
		AcceptUnadvertisedIss: true,
		Client:                st.c.oauthHTTP,
		NewTokenSource: func(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got = (&storedToken{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL,
				AuthStyle: int(cfg.Endpoint.AuthStyle), Resource: resource, Issuer: issuer}).fill(tok, cfg.Scopes, st.c.opts.Now())
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if sec.MetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: sec.MetadataURL}
	}
	if sec.ClientID != "" {
		// Bound to the issuer checked above: the go-sdk refuses another
		// one it might discover in the meantime.
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: sec.ClientID, Issuer: issuer}
		if sec.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: sec.ClientSecret}
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, err
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		if strings.Contains(err.Error(), sdkIssuerMismatch) {
			return nil, &issuerMismatch{bound: issuer}
		}
		return nil, err
	}
	if got == nil {
		return nil, errors.New("the authorization ended without a token")
	}
	return got, nil
}

// clientCredentials runs the client credentials grant (SEP-1046): discovery,
// then the token request with the client's secret or a signed assertion,
// asking for scopes (or the resource's scopes_supported when none). The
// client is bound to its issuer: another authorization server gets nothing.
func (st *oauthState) clientCredentials(ctx context.Context, resourceURL string, challenges []oauthex.Challenge, scopes []string) (*storedToken, error) {
	st.mu.Lock()
	sec := *st.sec
	st.mu.Unlock()
	prm, asm, err := discoverAuthServer(ctx, st.c.oauthHTTP, challenges, resourceURL)
	if err != nil {
		return nil, err
	}
	if err := checkIssuer(sec.Issuer, asm.Issuer); err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		scopes = boundScopes(prm.ScopesSupported)
	}
	scopes = union(scopes, sec.Scopes)
	t := &storedToken{ClientID: sec.ClientID, ClientSecret: sec.ClientSecret, TokenURL: asm.TokenEndpoint, Issuer: asm.Issuer, Resource: prm.Resource}
	methods := asm.TokenEndpointAuthMethodsSupported
	if sec.PrivateKey != "" {
		if len(methods) > 0 && !slices.Contains(methods, "private_key_jwt") {
			return nil, fmt.Errorf("the authorization server does not accept private_key_jwt client authentication (it accepts %s)", sanitize(strings.Join(methods, ", "), 200))
		}
		key, err := parseClientKey(sec.PrivateKey)
		if err != nil {
			return nil, err
		}
		if algs := asm.TokenEndpointAuthSigningAlgValuesSupported; len(algs) > 0 && !slices.Contains(algs, key.alg) {
			return nil, fmt.Errorf("the authorization server does not accept %s client assertions (it accepts %s)", key.alg, sanitize(strings.Join(algs, ", "), 200))
		}
	} else {
		t.AuthStyle = int(secretAuthStyle(methods))
	}
	tok, err := st.tokenRequest(ctx, &sec, t, scopes, nil)
	if err != nil {
		return nil, err
	}
	return t.fill(tok, scopes, st.c.opts.Now()), nil
}

// enterprise runs enterprise-managed authorization (SEP-990): discovery of
// the server's authorization server, the exchange of the person's ID token
// at the identity provider for an identity assertion (ID-JAG) for that
// authorization server and resource (RFC 8693), then the JWT bearer grant
// (RFC 7523) there with the client's own credentials, sent the way the
// server accepts them. The client is bound to its issuer like any
// pre-registered client.
func (st *oauthState) enterprise(ctx context.Context, resourceURL string, challenges []oauthex.Challenge, scopes []string) (*storedToken, error) {
	st.mu.Lock()
	sec := *st.sec
	st.mu.Unlock()
	prm, asm, err := discoverAuthServer(ctx, st.c.oauthHTTP, challenges, resourceURL)
	if err != nil {
		return nil, err
	}
	if err := checkIssuer(sec.Issuer, asm.Issuer); err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		scopes = boundScopes(prm.ScopesSupported)
	}
	scopes = union(scopes, sec.Scopes)
	// The identity provider's token endpoint (it need not do PKCE: only the
	// token exchange is asked of it).
	idp, err := duetauth.DiscoverMetadata(ctx, sec.IdPIssuer, st.c.oauthHTTP)
	if err != nil || idp == nil || idp.TokenEndpoint == "" {
		return nil, fmt.Errorf("the identity provider %s publishes no usable metadata", sanitize(sec.IdPIssuer, 200))
	}
	creds := &oauthex.ClientCredentials{ClientID: sec.IdPClientID}
	if sec.IdPClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: sec.IdPClientSecret}
	}
	jag, err := oauthex.ExchangeToken(ctx, idp.TokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: asm.Issuer, Resource: prm.Resource, Scope: scopes,
		SubjectToken: sec.IDToken, SubjectTokenType: oauthex.TokenTypeIDToken,
	}, creds, st.c.oauthHTTP)
	if err != nil {
		return nil, fmt.Errorf("the identity provider refused to exchange the ID token for an identity assertion: %w", err)
	}
	t := &storedToken{ClientID: sec.ClientID, ClientSecret: sec.ClientSecret, TokenURL: asm.TokenEndpoint, Issuer: asm.Issuer, Resource: prm.Resource,
		AuthStyle: int(secretAuthStyle(asm.TokenEndpointAuthMethodsSupported))}
	params := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {jag.AccessToken}}
	tok, err := st.tokenRequest(ctx, &sec, t, scopes, params)
	if err != nil {
		return nil, err
	}
	return t.fill(tok, scopes, st.c.opts.Now()), nil
}

// secretAuthStyle picks how a client secret is sent to the token endpoint:
// in the body when the server prefers it, with HTTP Basic when that is all
// it accepts, and by trying both when it does not say.
func secretAuthStyle(methods []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(methods, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(methods, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// discoverResource finds the protected resource metadata (RFC 9728) of the
// MCP endpoint resourceURL: at the URL the challenge names, then at the
// well-known path of the endpoint, then at the root. Without any, the
// server's origin is its authorization server (2025-03-26).
func discoverResource(ctx context.Context, hc *http.Client, challenges []oauthex.Challenge, resourceURL string) (*oauthex.ProtectedResourceMetadata, error) {
	type candidate struct{ url, resource string }
	var cands []candidate
	if u := challengeParam(challenges, "resource_metadata"); u != "" {
		cands = append(cands, candidate{u, resourceURL})
	}
	ru, err := url.Parse(resourceURL)
	if err != nil {
		return nil, err
	}
	mu := *ru
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	cands = append(cands, candidate{mu.String(), resourceURL})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery = "", ""
	cands = append(cands, candidate{mu.String(), root.String()})
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, hc)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("the protected resource metadata names no authorization server")
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: resourceURL}, nil
}

func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

func challengeScopes(cs []oauthex.Challenge) []string {
	return strings.Fields(challengeParam(cs, "scope"))
}

func bearerOf(req *http.Request) string {
	scheme, tok, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// covers reports whether granted includes every scope of want.
func covers(granted, want []string) bool {
	for _, s := range want {
		if !slices.Contains(granted, s) {
			return false
		}
	}
	return true
}

// union returns a followed by the scopes of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func scopeList(s []string) string {
	if len(s) == 0 {
		return "no particular scope"
	}
	return "scope " + strconvQuote(strings.Join(s, " "))
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", sanitize(s, 200)) }

// loginRequired says a call needs the owner's authorization, which only
// `duet server login` (or a caller with an Authorizer) can obtain.
type loginRequired struct {
	scopes []string
}

func (e *loginRequired) Error() string {
	return "OAuth authorization needed (" + scopeList(e.scopes) + ")"
}

// flowError is a failed OAuth step. Its message names no secret: token
// endpoint answers are reduced to their status and error code, and the
// registration's secrets are redacted from anything else.
type flowError struct {
	msg     string
	err     error
	refused *duet.Error // the SSRF guard refused an authorization server address
}

func (e *flowError) Error() string { return e.msg }
func (e *flowError) Unwrap() error { return e.err }

func (st *oauthState) flowError(op string, err error, refused *refusals) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.flowErrorLocked(op, err, refused)
}

// flowErrorLocked is flowError for a caller holding st.mu.
func (st *oauthState) flowErrorLocked(op string, err error, refused *refusals) error {
	var fe *flowError
	if errors.As(err, &fe) {
		return err
	}
	secrets := []string{st.sec.ClientSecret, st.sec.PrivateKey}
	if t := st.sec.Token; t != nil {
		secrets = append(secrets, t.Access, t.Refresh, t.ClientSecret)
	}
	var re *oauth2.RetrieveError
	var msg string
	switch {
	case errors.As(err, &re):
		msg = "the token endpoint answered"
		if re.Response != nil {
			msg += " " + re.Response.Status
		}
		if re.ErrorCode != "" {
			msg += ": " + sanitize(re.ErrorCode, 60)
			if re.ErrorDescription != "" {
				msg += ": " + sanitize(re.ErrorDescription, 200)
			}
		}
	case errors.Is(err, context.DeadlineExceeded):
		msg = "no answer in time"
	default:
		msg = err.Error()
		// Some go-sdk errors quote the body of an error page.
		if i := strings.Index(strings.ToLower(msg), "<!doctype html"); i >= 0 {
			msg = strings.TrimRight(msg[:i], " :") + " (an HTML error page)"
		} else if i := strings.Index(strings.ToLower(msg), "<html"); i >= 0 {
			msg = strings.TrimRight(msg[:i], " :") + " (an HTML error page)"
		}
		msg = sanitize(msg, 300)
	}
	msg = redact.Secrets(op+": "+msg, secrets...)
	return &flowError{msg: msg, err: err, refused: refused.first()}
}

// refusals records the SSRF guard's refusals of authorization server
// addresses during one OAuth step: the go-sdk reduces some errors to text.
type refusals struct {
	mu  sync.Mutex
	err *duet.Error
}

func (r *refusals) first() *duet.Error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

type refusalsKey struct{}

func withRefusals(ctx context.Context) (context.Context, *refusals) {
	r := &refusals{}
	return context.WithValue(ctx, refusalsKey{}, r), r
}

// oauthTransport is the transport of requests to authorization servers:
// the guarded pool, noting refusals.
type oauthTransport struct{ base http.RoundTripper }

func (t oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, sent, err := dpopTokenRequest(t.base, req.Clone(req.Context()))
	if !sent {
		resp, err = t.base.RoundTrip(req)
	}
	var de *duet.Error
	if err != nil && errors.As(err, &de) && de.Code == duet.CodeURLRefused {
		if r, _ := req.Context().Value(refusalsKey{}).(*refusals); r != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = de
			}
			r.mu.Unlock()
		}
	}
	return resp, err
}

// requiresDPoP reports whether a server's challenges ask for DPoP-bound
// tokens (RFC 9449 section 7.1: the DPoP scheme).
func requiresDPoP(challenges []oauthex.Challenge) bool {
	for _, c := range challenges {
		if strings.EqualFold(c.Scheme, dpopScheme) {
			return true
		}
	}
	return false
}
