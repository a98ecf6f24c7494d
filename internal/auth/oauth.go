package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
)

// MethodOAuth is an OAuth access token: one of the company identity
// provider's (a JWT for Duet's resource) or one Duet's own authorization
// server issued.
const MethodOAuth Method = "oauth"

// Prefixes of the secrets Duet's authorization server issues.
const (
	AccessTokenPrefix  = "duet_at_"
	RefreshTokenPrefix = "duet_rt_"
)

// signingAlgs are the JWS algorithms accepted: asymmetric only. "none" and
// the HMAC algorithms (a verifier holding only public keys must never
// accept a MAC keyed with one of them) are refused before any key is
// looked at.
var signingAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// Scopes names the two OAuth scopes Duet maps to what they allow.
type Scopes struct {
	Read string // the read tools, reports, prompts
	Run  string // starting and cancelling runs
}

// Access maps granted scopes to what they allow.
func (s Scopes) Access(granted []string) duet.Access {
	return duet.Access{Scoped: true, Read: slices.Contains(granted, s.Read), Run: slices.Contains(granted, s.Run)}
}

// All is every scope Duet knows, read first.
func (s Scopes) All() []string { return []string{s.Read, s.Run} }

// IssuerOptions configure a Verifier.
type IssuerOptions struct {
	// Issuer is the identity provider's issuer URL; its metadata is found
	// by RFC 8414 or OpenID Connect discovery.
	Issuer string
	// HTTPClient fetches the metadata and the keys; nil means a client with
	// a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// RefetchAfter is how soon a token signed with a key Duet has not seen
	// may make Duet fetch the key set again (the provider rotated its
	// keys); 0 means 1 s, so tokens with made-up key ids cost the provider
	// at most one fetch a second. KeysMaxAge is how long a key set is used before
	// it is fetched again anyway; 0 means 1 h.
	RefetchAfter, KeysMaxAge time.Duration
}

// Verifier checks JWTs one identity provider signed: discovery by RFC 8414
// or OpenID Connect (through the MCP SDK, which checks that the metadata
// names the issuer it was fetched for), and its JWKS cached and fetched
// again when a token names a key id the cache lacks — how a key rotation at
// the provider is followed.
type Verifier struct {
	o IssuerOptions

	mu      sync.Mutex
	meta    *oauthex.AuthServerMeta
	keys    *jose.JSONWebKeySet
	fetched time.Time // when keys were fetched
}

// NewVerifier returns a Verifier for o.Issuer. Nothing is fetched until
// the first token arrives.
func NewVerifier(o IssuerOptions) *Verifier {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RefetchAfter <= 0 {
		o.RefetchAfter = time.Second
	}
	if o.KeysMaxAge <= 0 {
		o.KeysMaxAge = time.Hour
	}
	return &Verifier{o: o}
}

// Issuer is the issuer the verifier trusts.
func (v *Verifier) Issuer() string { return v.o.Issuer }

// Metadata returns the provider's authorization server metadata, fetched
// once. Returns UNAVAILABLE when the provider cannot be reached or its
// metadata is unusable.
func (v *Verifier) Metadata(ctx context.Context) (*oauthex.AuthServerMeta, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.metadataLocked(ctx)
}

func (v *Verifier) metadataLocked(ctx context.Context) (*oauthex.AuthServerMeta, error) {
	if v.meta != nil {
		return v.meta, nil
	}
	m, err := DiscoverMetadata(ctx, v.o.Issuer, v.o.HTTPClient)
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "the identity provider's metadata cannot be read")
	}
	if m == nil {
		return nil, duet.Errorf(duet.CodeUnavailable, "the identity provider publishes no OAuth or OpenID Connect metadata")
	}
	if m.JWKSURI == "" {
		return nil, duet.Errorf(duet.CodeUnavailable, "the identity provider's metadata names no jwks_uri")
	}
	v.meta = m
	return m, nil
}

// keyFor returns the keys that may have signed a token with header h,
// fetching the key set when it is missing, old, or lacks h's key id (at
// most once per RefetchAfter).
func (v *Verifier) keyFor(ctx context.Context, h jose.Header) ([]jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.o.Now()
	find := func() []jose.JSONWebKey {
		if v.keys == nil {
			return nil
		}
		if h.KeyID != "" {
			return v.keys.Key(h.KeyID)
		}
		var out []jose.JSONWebKey
		for _, k := range v.keys.Keys {
			if k.Use == "" || k.Use == "sig" {
				out = append(out, k)
			}
		}
		return out
	}
	stale := v.keys == nil || now.Sub(v.fetched) > v.o.KeysMaxAge
	ks := find()
	if !stale && (len(ks) > 0 || now.Sub(v.fetched) < v.o.RefetchAfter) {
		return ks, nil
	}
	if err := v.fetchKeysLocked(ctx); err != nil {
		if len(ks) > 0 {
			return ks, nil // keep using what we have while the provider is unreachable
		}
		return nil, err
	}
	return find(), nil
}

func (v *Verifier) fetchKeysLocked(ctx context.Context) error {
	m, err := v.metadataLocked(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.JWKSURI, nil)
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "the identity provider's jwks_uri is not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.o.HTTPClient.Do(req)
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "the identity provider's keys cannot be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return duet.Errorf(duet.CodeUnavailable, "the identity provider's keys: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "the identity provider's keys cannot be read")
	}
	var ks jose.JSONWebKeySet
	if err := json.Unmarshal(body, &ks); err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "the identity provider's keys are not a JWK set")
	}
	v.keys, v.fetched = &ks, v.o.Now()
	return nil
}

// Expect is what a token must say besides being signed by the issuer and
// unexpired.
type Expect struct {
	// Audience must be one of the token's audiences.
	Audience string
	// Types are the accepted "typ" headers (compared case-insensitively,
	// with or without "application/"); empty accepts any.
	Types []string
	// Leeway is the clock skew tolerated; 0 means 30 s.
	Leeway time.Duration
}

// Claims are a verified token's claims.
type Claims struct {
	jwt.Claims
	All map[string]any
}

// Scopes are the token's scopes: "scope" (space-separated, RFC 9068) or
// "scp" (a list or a string, as some providers write it).
func (c *Claims) Scopes() []string {
	switch s := c.All["scope"].(type) {
	case string:
		return strings.Fields(s)
	}
	switch s := c.All["scp"].(type) {
	case string:
		return strings.Fields(s)
	case []any:
		var out []string
		for _, e := range s {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// String returns claim name if it is a string.
func (c *Claims) String(name string) string {
	s, _ := c.All[name].(string)
	return s
}

// errToken is the one message a refused token gets: the reason is logged
// by the caller, never told to the client (which could probe with it).
func errToken(reason string) error {
	return &duet.Error{Code: duet.CodeUnauthenticated, Message: "invalid or expired token", Op: "auth.Verify", Err: errors.New(reason)}
}

// Verify checks raw: a compact JWS with an asymmetric algorithm, signed by
// a key of the issuer's key set, issued by the issuer, for want.Audience,
// unexpired (an exp claim is required), of an accepted type. Returns
// UNAUTHENTICATED for any token that fails (the reason is in the error's
// chain, not its message), UNAVAILABLE when the provider cannot be reached.
func (v *Verifier) Verify(ctx context.Context, raw string, want Expect) (*Claims, error) {
	tok, err := jwt.ParseSigned(raw, signingAlgs)
	if err != nil {
		return nil, errToken("not a JWT signed with an accepted algorithm: " + err.Error())
	}
	if len(tok.Headers) != 1 {
		return nil, errToken("not one signature")
	}
	h := tok.Headers[0]
	if len(want.Types) > 0 {
		typ, _ := h.ExtraHeaders[jose.HeaderType].(string)
		typ = strings.TrimPrefix(strings.ToLower(typ), "application/")
		if !slices.ContainsFunc(want.Types, func(t string) bool { return strings.EqualFold(t, typ) }) {
			return nil, errToken(fmt.Sprintf("typ %q is not accepted here", typ))
		}
	}
	keys, err := v.keyFor(ctx, h)
	if err != nil {
		return nil, err
	}
	var c Claims
	verified := false
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if err := tok.Claims(k.Key, &c.Claims, &c.All); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errToken("no key of the issuer verifies the signature")
	}
	leeway := want.Leeway
	if leeway <= 0 {
		leeway = 30 * time.Second
	}
	if c.Expiry == nil {
		return nil, errToken("no exp claim")
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: v.o.Issuer, AnyAudience: jwt.Audience{want.Audience}, Time: v.o.Now()}, leeway); err != nil {
		return nil, errToken(err.Error())
	}
	return &c, nil
}

// OAuthOptions turn on OAuth access tokens on an Authenticator.
type OAuthOptions struct {
	// Issuer verifies the identity provider's JWT access tokens (nil: none
	// are accepted).
	Issuer *Verifier
	// Audience is what their aud must include: Duet's resource URL.
	Audience string
	// UserClaim names the user; "" means sub.
	UserClaim string
	Scopes    Scopes
	// Issued, if set, looks up the access tokens Duet's own authorization
	// server issued (AccessTokenPrefix).
	Issued duet.OAuthStore
}

// EnableOAuth makes a accept OAuth access tokens as o says.
func (a *Authenticator) EnableOAuth(o OAuthOptions) {
	if o.UserClaim == "" {
		o.UserClaim = "sub"
	}
	a.oauth = &o
}

// OAuth returns the OAuth options in force (nil when OAuth is off).
func (a *Authenticator) OAuth() *OAuthOptions { return a.oauth }

// UserFromClaims returns the user a verified token names through claim.
// Returns UNAUTHENTICATED when it names no valid user id.
func UserFromClaims(c *Claims, claim string) (string, error) {
	user := c.String(claim)
	if user == "" && claim == "sub" {
		user = c.Subject
	}
	if user == "" {
		return "", duet.Errorf(duet.CodeUnauthenticated, "the token has no %s claim naming the user", claim)
	}
	if err := duet.ValidUserID(user); err != nil {
		return "", duet.Errorf(duet.CodeUnauthenticated, "the token's %s claim is not a valid user id: %s", claim, duet.ErrorMessage(err))
	}
	return user, nil
}

// authenticateOAuth identifies the bearer of an OAuth access token.
func (a *Authenticator) authenticateOAuth(ctx context.Context, tok string) (Identity, error) {
	o := a.oauth
	if strings.HasPrefix(tok, AccessTokenPrefix) {
		if o.Issued == nil {
			return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
		}
		t, err := o.Issued.FindOAuthToken(ctx, duet.OAuthAccess, HashToken(tok))
		if err != nil {
			return Identity{}, err
		}
		if err := duet.ValidUserID(t.UserID); err != nil {
			return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "the token's user id is invalid")
		}
		return Identity{UserID: t.UserID, Method: MethodOAuth, Access: o.Scopes.Access(strings.Fields(t.Scope))}, nil
	}
	if o.Issuer == nil {
		return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
	}
	c, err := o.Issuer.Verify(ctx, tok, Expect{Audience: o.Audience, Types: []string{"", "jwt", "at+jwt"}})
	if err != nil {
		return Identity{}, err
	}
	user, err := UserFromClaims(c, o.UserClaim)
	if err != nil {
		return Identity{}, err
	}
	return Identity{UserID: user, Method: MethodOAuth, Access: o.Scopes.Access(c.Scopes())}, nil
}

// DiscoverMetadata finds an issuer's metadata the way the MCP SDK does —
// RFC 8414 at /.well-known/oauth-authorization-server (with path
// insertion), then OpenID Connect discovery — decoded into the SDK's type,
// with the issuer compared exactly (RFC 8414 §3.3: what stops mix-up
// attacks) and the endpoints https or loopback. Unlike the SDK's client
// discovery it does not insist on PKCE being advertised: verifying tokens
// and exchanging them need the keys and the token endpoint, not the
// authorization endpoint. Returns nil, nil when no document is found.
func DiscoverMetadata(ctx context.Context, issuer string, hc *http.Client) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("issuer %q is not a URL", issuer)
	}
	path := strings.TrimRight(u.Path, "/")
	var cands []string
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		c := *u
		c.Path, c.RawQuery, c.Fragment = wk+path, "", ""
		cands = append(cands, c.String())
	}
	if path != "" {
		c := *u
		c.Path = path + "/.well-known/openid-configuration"
		cands = append(cands, c.String())
	}
	for _, c := range cands {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			continue
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: HTTP %d", c, resp.StatusCode)
		}
		var m oauthex.AuthServerMeta
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("%s: not JSON metadata", c)
		}
		if strings.TrimRight(m.Issuer, "/") != strings.TrimRight(issuer, "/") {
			return nil, fmt.Errorf("%s names issuer %q, not %q", c, m.Issuer, issuer)
		}
		for _, e := range []string{m.JWKSURI, m.TokenEndpoint, m.AuthorizationEndpoint} {
			if e != "" && !secureURL(e) {
				return nil, fmt.Errorf("%s: endpoint %q is neither https nor loopback", c, e)
			}
		}
		return &m, nil
	}
	return nil, nil
}

func secureURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	h := u.Hostname()
	ip := net.ParseIP(h)
	return u.Scheme == "http" && (h == "localhost" || ip != nil && ip.IsLoopback())
}
