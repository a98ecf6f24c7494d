// Package oauthserver is Duet's own OAuth 2.1 authorization server for its
// MCP endpoint, for companies whose identity provider lacks what MCP clients
// need to sign in with nothing but Duet's URL (dynamic client registration,
// client ID metadata documents). It registers clients, shows the person a
// consent screen, and issues access and refresh tokens for Duet's resource;
// the person's login itself is delegated to the company's OpenID Connect
// provider. It also accepts SEP-990 identity assertion grants (ID-JAG, RFC
// 7523) the provider issued for Duet.
//
// Every secret it hands out (login states, codes, access and refresh
// tokens) is random, kept only as a hash (duet.OAuthStore), and single-use
// where the protocol says so; a replayed code or refresh token revokes the
// whole sign-in it belongs to.
package oauthserver

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
)

// Paths the server answers (under Options.Issuer).
const (
	PathMetadata  = "/.well-known/oauth-authorization-server"
	PathAuthorize = "/oauth/authorize"
	PathCallback  = "/oauth/callback"
	PathConsent   = "/oauth/consent"
	PathToken     = "/oauth/token"
	PathRegister  = "/oauth/register"
	PathRevoke    = "/oauth/revoke"
)

// Grant types beyond the authorization code and refresh token.
const GrantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// Options configure the server. Zero durations mean the defaults.
type Options struct {
	// Issuer is Duet's public URL (DUET_PUBLIC_URL): the authorization
	// server's issuer, and the base of its endpoints.
	Issuer string
	// Resource is Duet's protected resource (Issuer + /mcp/http); a client
	// that names another resource is refused (RFC 8707).
	Resource string
	Store    duet.OAuthStore
	// Provider verifies the identity provider's ID tokens and ID-JAGs; its
	// metadata gives the authorization and token endpoints of the login.
	Provider *auth.Verifier
	// ClientID and ClientSecret are Duet's client at the provider.
	ClientID, ClientSecret string
	// LoginScopes are asked of the provider at login (openid is added).
	LoginScopes []string
	// UserClaim names the user in ID tokens and ID-JAGs; "" means sub.
	UserClaim string
	Scopes    auth.Scopes
	// AccessTTL and RefreshTTL are the lifetimes of issued tokens: 1h and
	// 720h by default.
	AccessTTL, RefreshTTL time.Duration
	// ProviderClient calls the provider (token endpoint); nil means a client
	// with a 10 s timeout. MetadataClient fetches client ID metadata
	// documents, which are on addresses the client chose: give it the
	// network guard's client. nil means client ID metadata documents are
	// not supported.
	ProviderClient, MetadataClient *http.Client
	// MetadataTimeout bounds the fetch of a client ID metadata document
	// (its address is the client's choice, its server may be slow on
	// purpose); 0 means 10 s.
	MetadataTimeout time.Duration
	// MaxRegistrations is how many clients one address may register per
	// hour (a burst of that many, then one every hour/MaxRegistrations);
	// the server as a whole takes ten times as many. 0 means 20. Dynamic
	// registration needs no credentials: without a budget anyone could
	// fill the database with clients.
	MaxRegistrations int
	// Audit receives one record per request to the server's endpoints
	// (registration, authorization, login callback, consent, token,
	// revocation): who, which client, the outcome. nil keeps none.
	Audit  func(*duet.AuditRecord)
	Logger *slog.Logger
	Now    func() time.Time
}

// Server is the authorization server; it is an http.Handler for its paths.
type Server struct {
	o             Options
	mux           *http.ServeMux
	registrations *buckets // client registrations per address, and "" for all
}

// New returns the server.
func New(o Options) *Server {
	if o.AccessTTL <= 0 {
		o.AccessTTL = time.Hour
	}
	if o.RefreshTTL <= 0 {
		o.RefreshTTL = 720 * time.Hour
	}
	if o.UserClaim == "" {
		o.UserClaim = "sub"
	}
	if o.ProviderClient == nil {
		o.ProviderClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MetadataTimeout <= 0 {
		o.MetadataTimeout = 10 * time.Second
	}
	if o.MaxRegistrations <= 0 {
		o.MaxRegistrations = 20
	}
	o.Issuer = strings.TrimRight(o.Issuer, "/")
	s := &Server{o: o, mux: http.NewServeMux(), registrations: &buckets{now: o.Now, per: time.Hour, n: map[string]*bucket{}}}
	s.mux.HandleFunc("GET "+PathMetadata, s.metadata)
	s.mux.HandleFunc("GET "+PathAuthorize, s.audited("oauth/authorize", s.authorize))
	s.mux.HandleFunc("GET "+PathCallback, s.audited("oauth/callback", s.callback))
	s.mux.HandleFunc("POST "+PathConsent, s.audited("oauth/consent", s.consent))
	s.mux.HandleFunc("POST "+PathToken, s.audited("oauth/token", s.token))
	s.mux.HandleFunc("POST "+PathRegister, s.audited("oauth/register", s.register))
	s.mux.HandleFunc("POST "+PathRevoke, s.audited("oauth/revoke", s.revoke))
	return s
}

// ServeHTTP serves the server's paths.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Issuer is the server's issuer URL.
func (s *Server) Issuer() string { return s.o.Issuer }

func newSecret(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("oauthserver: crypto/rand failed: " + err.Error())
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func hash(secret string) string { return auth.HashToken(secret) }
