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
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

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

// Metadata is the server's RFC 8414 metadata.
func (s *Server) Metadata() *oauthex.AuthServerMeta {
	m := &oauthex.AuthServerMeta{
		Issuer:                                     s.o.Issuer,
		AuthorizationEndpoint:                      s.o.Issuer + PathAuthorize,
		TokenEndpoint:                              s.o.Issuer + PathToken,
		RegistrationEndpoint:                       s.o.Issuer + PathRegister,
		RevocationEndpoint:                         s.o.Issuer + PathRevoke,
		ScopesSupported:                            append(s.o.Scopes.All(), "offline_access"),
		ResponseTypesSupported:                     []string{"code"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token", GrantJWTBearer},
		TokenEndpointAuthMethodsSupported:          []string{"none", "client_secret_basic", "client_secret_post"},
		RevocationEndpointAuthMethodsSupported:     []string{"none", "client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		ClientIDMetadataDocumentSupported:          s.o.MetadataClient != nil,
		AuthorizationResponseIssParameterSupported: true,
	}
	return m
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	writeJSON(w, http.StatusOK, s.Metadata())
}

// ---- secrets ----

func newSecret(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("oauthserver: crypto/rand failed: " + err.Error())
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func hash(secret string) string { return auth.HashToken(secret) }

// truncateName bounds a client's display name to 200 bytes (at a rune
// boundary).
func truncateName(s string) string {
	if len(s) <= 200 {
		return s
	}
	s = s[:200]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// ---- errors ----

// oauthError is an RFC 6749 error response.
type oauthError struct {
	status int
	Code   string `json:"error"`
	Desc   string `json:"error_description,omitempty"`
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Desc }

func errf(status int, code, format string, args ...any) *oauthError {
	return &oauthError{status: status, Code: code, Desc: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	if oe, ok := v.(*oauthError); ok {
		noteError(w, oe.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// fail answers an endpoint called by a client (token, register, revoke).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var oe *oauthError
	if !errors.As(err, &oe) {
		s.o.Logger.ErrorContext(r.Context(), "oauth server", "path", r.URL.Path, "err", err)
		oe = errf(http.StatusInternalServerError, "server_error", "internal error")
		if duet.ErrorCode(err) == duet.CodeUnavailable {
			oe = errf(http.StatusServiceUnavailable, "temporarily_unavailable", "%s", duet.ErrorMessage(err))
		}
	}
	if oe.Code == "invalid_client" && r.Header.Get("Authorization") != "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="duet"`)
	}
	writeJSON(w, oe.status, oe)
}

// ---- clients ----

// client is a client as the server sees it: registered (dynamic
// registration) or described by its client ID metadata document.
type client struct {
	ID           string
	Name         string
	RedirectURIs []string
	SecretHash   string
}

// findClient returns the client named id: a registered one, or, for an
// https URL, the client its metadata document describes.
func (s *Server) findClient(ctx context.Context, id string) (*client, error) {
	if id == "" {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client_id is required")
	}
	if strings.HasPrefix(id, "https://") {
		return s.metadataClient(ctx, id)
	}
	c, err := s.o.Store.FindOAuthClient(ctx, id)
	if duet.ErrorCode(err) == duet.CodeNotFound {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "unknown client")
	}
	if err != nil {
		return nil, err
	}
	return &client{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs, SecretHash: c.SecretHash}, nil
}

// metadataClient fetches a client ID metadata document (the MCP
// authorization spec's client_id as an https URL).
func (s *Server) metadataClient(ctx context.Context, id string) (*client, error) {
	if s.o.MetadataClient == nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client ID metadata documents are not accepted here; register the client")
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil || u.Path == "" || u.Path == "/" {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "a client ID metadata document URL is https with a path")
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.MetadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "bad client id URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.o.MetadataClient.Do(req)
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document cannot be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document cannot be read")
	}
	var doc struct {
		ClientID string `json:"client_id"`
		oauthex.ClientRegistrationMetadata
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.ClientID != id || len(doc.RedirectURIs) == 0 {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document must be JSON naming this client_id and its redirect_uris")
	}
	if m := doc.TokenEndpointAuthMethod; m != "" && m != "none" {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "a client identified by a metadata document authenticates with none")
	}
	if oe := checkRedirects(doc.RedirectURIs); oe != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the client's metadata document: %s", oe.Desc)
	}
	return &client{ID: id, Name: truncateName(doc.ClientName), RedirectURIs: doc.RedirectURIs}, nil
}

// authenticateClient identifies the client of a token or revocation
// request: client_secret_basic, client_secret_post, or a public client's
// client_id.
func (s *Server) authenticateClient(ctx context.Context, r *http.Request) (*client, error) {
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, errf(http.StatusUnauthorized, "invalid_client", "malformed Basic credentials")
		}
		if f := r.PostForm.Get("client_id"); f != "" && f != id {
			return nil, errf(http.StatusBadRequest, "invalid_request", "two different client ids")
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	eventOf(ctx).client = clip(id) // the client claimed, kept when it fails to authenticate
	c, err := s.findClient(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.SecretHash == "" {
		if secret != "" {
			return nil, errf(http.StatusUnauthorized, "invalid_client", "this client has no secret")
		}
		return c, nil
	}
	got := sha256.Sum256([]byte(hash(secret)))
	want := sha256.Sum256([]byte(c.SecretHash))
	if secret == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client authentication failed")
	}
	return c, nil
}

// validRedirect checks a redirect URI a client registers: https, a
// loopback http address (a native app, RFC 8252), or a private-use scheme;
// no fragment.
func validRedirect(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Fragment != "" || u.User != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u.Host != ""
	case "http":
		return isLoopback(u.Hostname())
	case "javascript", "data", "file", "vbscript":
		return false
	}
	return strings.Contains(u.Scheme, ".") || u.Host == "" // private-use scheme (com.example.app:/cb)
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkRedirects checks the redirect URIs a client declares, registered
// or in its client ID metadata document: 1 to 20, each valid
// (validRedirect) and at most 2000 bytes. Returns invalid_redirect_uri.
func checkRedirects(uris []string) *oauthError {
	if len(uris) == 0 || len(uris) > 20 {
		return errf(http.StatusBadRequest, "invalid_redirect_uri", "give 1 to 20 redirect_uris")
	}
	for _, u := range uris {
		if !validRedirect(u) || len(u) > 2000 {
			return errf(http.StatusBadRequest, "invalid_redirect_uri", "redirect URIs must be https, loopback http, or a private-use scheme, without a fragment")
		}
	}
	return nil
}

// redirectAllowed reports whether uri is one of c's redirect URIs; for a
// loopback http URI any port matches (RFC 8252 §7.3: the port is chosen at
// run time).
func (c *client) redirectAllowed(uri string) bool {
	if slices.Contains(c.RedirectURIs, uri) {
		return true
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
		return false
	}
	for _, r := range c.RedirectURIs {
		ru, err := url.Parse(r)
		if err == nil && ru.Scheme == "http" && ru.Hostname() == u.Hostname() && ru.Path == u.Path && ru.RawQuery == u.RawQuery {
			return true
		}
	}
	return false
}

// register is dynamic client registration (RFC 7591).
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	addr, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		addr = r.RemoteAddr
	}
	if wait := s.registrations.take([]string{"", addr}, []int{10 * s.o.MaxRegistrations, s.o.MaxRegistrations}); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		writeJSON(w, http.StatusTooManyRequests, errf(0, "temporarily_unavailable", "too many client registrations; retry later"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errf(0, "invalid_client_metadata", "the client metadata is over %d bytes", mbe.Limit))
			return
		}
		writeJSON(w, http.StatusBadRequest, errf(0, "invalid_client_metadata", "cannot read the request"))
		return
	}
	var m oauthex.ClientRegistrationMetadata
	if err := json.Unmarshal(body, &m); err != nil {
		writeJSON(w, http.StatusBadRequest, errf(0, "invalid_client_metadata", "the body is not client metadata JSON"))
		return
	}
	if oe := checkRedirects(m.RedirectURIs); oe != nil {
		writeJSON(w, http.StatusBadRequest, oe)
		return
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic" // RFC 7591 §2 default
	}
	if method != "none" && method != "client_secret_basic" && method != "client_secret_post" {
		writeJSON(w, http.StatusBadRequest, errf(0, "invalid_client_metadata", "token_endpoint_auth_method must be none, client_secret_basic or client_secret_post"))
		return
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" && g != GrantJWTBearer {
			writeJSON(w, http.StatusBadRequest, errf(0, "invalid_client_metadata", "unsupported grant type %q", g))
			return
		}
	}
	// client_name is shown on the consent page, never branched on (no
	// client-specific behaviour: test/interop's TestNoClientSpecificBranches).
	c := &duet.OAuthClient{ID: duet.NewID("dcr"), RedirectURIs: m.RedirectURIs}
	c.Name = truncateName(m.ClientName)
	var secret string
	if method != "none" {
		secret = newSecret("duet_cs_")
		c.SecretHash = hash(secret)
	}
	if err := s.o.Store.CreateOAuthClient(r.Context(), c); err != nil {
		s.fail(w, r, err)
		return
	}
	eventOf(r.Context()).client = c.ID
	grants := m.GrantTypes
	if len(grants) == 0 {
		grants = []string{"authorization_code", "refresh_token"}
	}
	resp := map[string]any{
		"client_id": c.ID, "client_id_issued_at": c.CreatedAt.Unix(), "redirect_uris": c.RedirectURIs,
		"token_endpoint_auth_method": method, "grant_types": grants, "response_types": []string{"code"},
	}
	if c.Name != "" {
		resp["client_name"] = c.Name
	}
	if secret != "" {
		resp["client_secret"] = secret
		resp["client_secret_expires_at"] = 0
	}
	writeJSON(w, http.StatusCreated, resp)
}

// once refuses a request with a parameter given more than once (RFC 6749
// §3.1, §3.2: parameters MUST NOT be repeated), but resource (RFC 8707
// allows several; each is checked): read one way here and another way by
// a proxy or a client library, a repeated one is ambiguous.
func once(v url.Values) error {
	for k, vs := range v {
		if len(vs) > 1 && k != "resource" {
			return errf(http.StatusBadRequest, "invalid_request", "parameter %.40q is repeated", k)
		}
	}
	return nil
}

// ---- authorization ----

// request is a client's authorization request, carried from /authorize
// through the login and the consent to the code.
type request struct {
	ClientID      string `json:"clientId"`
	DisplayName   string `json:"clientName,omitempty"` // the client's client_name, for the consent page
	RedirectURI   string `json:"redirectUri"`
	State         string `json:"state,omitempty"`
	CodeChallenge string `json:"codeChallenge"`
	Scope         string `json:"scope"`
	// Login: what Duet's own login at the provider needs back.
	Nonce    string `json:"nonce,omitempty"`
	Verifier string `json:"verifier,omitempty"` // PKCE verifier of Duet's login (short-lived, single-use)
	Browser  string `json:"browser,omitempty"`  // hash of the browser's cookie
}

const cookieName = "duet_oauth"

// scopeFor is the scope granted for a request: the requested scopes Duet
// knows (all of them when none is named); offline_access is implied (a
// refresh token is always issued) and other scopes are ignored.
func (s *Server) scopeFor(requested string) (string, bool) {
	var out []string
	for _, sc := range strings.Fields(requested) {
		if slices.Contains(s.o.Scopes.All(), sc) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 && strings.TrimSpace(requested) != "" && !onlyOffline(requested) {
		return "", false
	}
	if len(out) == 0 {
		out = s.o.Scopes.All()
	}
	return strings.Join(out, " "), true
}

func onlyOffline(s string) bool {
	for _, f := range strings.Fields(s) {
		if f != "offline_access" && f != "openid" {
			return false
		}
	}
	return true
}

// authorize starts an authorization: it checks the client's request and
// sends the person to the identity provider to sign in.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		err = once(q)
	}
	if err != nil {
		s.page(w, http.StatusBadRequest, "This request cannot be read", errText(err)+". Nothing was sent to the application.")
		return
	}
	eventOf(r.Context()).client = clip(q.Get("client_id"))
	c, err := s.findClient(r.Context(), q.Get("client_id"))
	if err != nil {
		s.page(w, http.StatusBadRequest, "This application is not known to Duet", errText(err))
		return
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" && len(c.RedirectURIs) == 1 {
		redirect = c.RedirectURIs[0]
	}
	if !c.redirectAllowed(redirect) {
		s.page(w, http.StatusBadRequest, "Redirect address not registered", "The application asked to return to an address it did not register. Nothing was sent to it.")
		return
	}
	back := func(code, desc string) {
		u, _ := url.Parse(redirect)
		v := u.Query()
		v.Set("error", code)
		v.Set("error_description", desc)
		if st := q.Get("state"); st != "" {
			v.Set("state", st)
		}
		v.Set("iss", s.o.Issuer)
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	if q.Get("response_type") != "code" {
		back("unsupported_response_type", "response_type must be code")
		return
	}
	if !validChallenge(q.Get("code_challenge")) || q.Get("code_challenge_method") != "S256" {
		back("invalid_request", "PKCE is required: code_challenge (43 base64url characters) with code_challenge_method=S256")
		return
	}
	if len(q.Get("state")) > maxState {
		// The request is kept until the person returns: bounded first.
		back("invalid_request", fmt.Sprintf("state is over %d bytes", maxState))
		return
	}
	if res := q["resource"]; len(res) > 0 && (len(res) > 1 || !s.resourceOK(res[0])) {
		back("invalid_target", "the resource is not Duet's MCP endpoint")
		return
	}
	scope, ok := s.scopeFor(q.Get("scope"))
	if !ok {
		back("invalid_scope", "Duet's scopes are "+strings.Join(s.o.Scopes.All(), " "))
		return
	}
	meta, err := s.o.Provider.Metadata(r.Context())
	if err != nil {
		s.page(w, http.StatusServiceUnavailable, "The sign-in service cannot be reached", duet.ErrorMessage(err))
		return
	}
	cookie := newSecret("")
	state := newSecret("")
	req := request{ClientID: c.ID, DisplayName: c.Name, RedirectURI: redirect, State: q.Get("state"),
		CodeChallenge: q.Get("code_challenge"), Scope: scope, Nonce: newSecret(""), Verifier: oauth2.GenerateVerifier(), Browser: hash(cookie)}
	if err := s.put(r.Context(), duet.OAuthLogin, state, req, "", "", 10*time.Minute); err != nil {
		s.page(w, http.StatusServiceUnavailable, "Duet cannot start the sign-in", duet.ErrorMessage(err))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: cookie, Path: "/oauth/", HttpOnly: true,
		Secure: strings.HasPrefix(s.o.Issuer, "https://"), SameSite: http.SameSiteLaxMode, MaxAge: 600})
	cfg := s.loginConfig(meta)
	http.Redirect(w, r, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(req.Verifier), oauth2.SetAuthURLParam("nonce", req.Nonce)), http.StatusFound)
}

// maxState bounds a client's state, which Duet keeps through the sign-in.
const maxState = 2048

// validChallenge reports whether c is an S256 code challenge: the
// unpadded base64url encoding of a SHA-256 hash (RFC 7636 §4.2).
func validChallenge(c string) bool {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size && len(c) == 43
}

func (s *Server) resourceOK(res string) bool {
	return strings.TrimRight(res, "/") == s.o.Resource || strings.TrimRight(res, "/") == s.o.Issuer
}

func (s *Server) loginConfig(meta *oauthex.AuthServerMeta) *oauth2.Config {
	scopes := []string{"openid"}
	for _, sc := range s.o.LoginScopes {
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	return &oauth2.Config{
		ClientID: s.o.ClientID, ClientSecret: s.o.ClientSecret, RedirectURL: s.o.Issuer + PathCallback, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint},
	}
}

// put stores a secret of kind with req as its data.
func (s *Server) put(ctx context.Context, kind duet.OAuthTokenKind, secret string, req request, grant, user string, ttl time.Duration) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	now := s.o.Now()
	return s.o.Store.PutOAuthToken(ctx, &duet.OAuthToken{Hash: hash(secret), Kind: kind, GrantID: grant, ClientID: req.ClientID,
		UserID: user, Scope: req.Scope, Data: string(data), CreatedAt: now, ExpiresAt: now.Add(ttl)})
}

// browserOwns reports whether the request comes from the browser that
// started the authorization (its cookie): a sign-in someone else started
// cannot be completed in the victim's browser.
func browserOwns(r *http.Request, req request) bool {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return false
	}
	got, want := sha256.Sum256([]byte(hash(ck.Value))), sha256.Sum256([]byte(req.Browser))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// callback is where the identity provider sends the person back: Duet
// redeems the code, verifies the ID token, and shows the consent screen.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tok, err := s.o.Store.UseOAuthToken(r.Context(), duet.OAuthLogin, hash(q.Get("state")))
	if err != nil {
		s.page(w, http.StatusBadRequest, "This sign-in has expired", "Start again from your application.")
		return
	}
	var req request
	if err := json.Unmarshal([]byte(tok.Data), &req); err != nil || !browserOwns(r, req) {
		s.page(w, http.StatusBadRequest, "This sign-in was started in another browser", "Start again from your application, in this browser.")
		return
	}
	if e := q.Get("error"); e != "" {
		s.back(w, r, req, "access_denied", "the sign-in at the identity provider did not complete")
		return
	}
	meta, err := s.o.Provider.Metadata(r.Context())
	if err != nil {
		s.page(w, http.StatusServiceUnavailable, "The sign-in service cannot be reached", duet.ErrorMessage(err))
		return
	}
	ctx := context.WithValue(r.Context(), oauth2.HTTPClient, s.o.ProviderClient)
	t, err := s.loginConfig(meta).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(req.Verifier))
	if err != nil {
		s.o.Logger.WarnContext(r.Context(), "oauth login: code exchange at the identity provider failed", "err", err)
		s.page(w, http.StatusBadGateway, "The identity provider refused the sign-in", "Start again from your application.")
		return
	}
	idt, _ := t.Extra("id_token").(string)
	claims, err := s.o.Provider.Verify(r.Context(), idt, auth.Expect{Audience: s.o.ClientID})
	if err == nil && claims.String("nonce") != req.Nonce {
		err = errors.New("the ID token's nonce does not match")
	}
	if err != nil {
		s.o.Logger.WarnContext(r.Context(), "oauth login: ID token refused", "err", err)
		s.page(w, http.StatusBadGateway, "The identity provider's answer could not be verified", "Start again from your application.")
		return
	}
	eventOf(r.Context()).client = req.ClientID
	user, err := auth.UserFromClaims(claims, s.o.UserClaim)
	eventOf(r.Context()).user = user
	if err != nil {
		s.page(w, http.StatusForbidden, "Your account cannot use Duet", duet.ErrorMessage(err))
		return
	}
	consent := newSecret("")
	req.Nonce, req.Verifier = "", ""
	if err := s.put(r.Context(), duet.OAuthConsent, consent, req, "", user, 10*time.Minute); err != nil {
		s.page(w, http.StatusServiceUnavailable, "Duet cannot continue the sign-in", duet.ErrorMessage(err))
		return
	}
	s.consentPage(w, req, user, consent)
}

// consent records the person's answer and, if they allowed it, sends the
// client its code.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.page(w, http.StatusBadRequest, "Bad request", "")
		return
	}
	tok, err := s.o.Store.UseOAuthToken(r.Context(), duet.OAuthConsent, hash(r.PostForm.Get("consent")))
	if err != nil {
		s.page(w, http.StatusBadRequest, "This sign-in has expired", "Start again from your application.")
		return
	}
	var req request
	if err := json.Unmarshal([]byte(tok.Data), &req); err != nil || !browserOwns(r, req) {
		s.page(w, http.StatusBadRequest, "This sign-in was started in another browser", "Start again from your application, in this browser.")
		return
	}
	ev := eventOf(r.Context())
	ev.user, ev.client = tok.UserID, req.ClientID
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/oauth/", MaxAge: -1})
	if r.PostForm.Get("action") != "allow" {
		s.back(w, r, req, "access_denied", "the person did not allow access")
		return
	}
	code := newSecret("")
	if err := s.put(r.Context(), duet.OAuthCode, code, req, duet.NewID("grant"), tok.UserID, time.Minute); err != nil {
		s.page(w, http.StatusServiceUnavailable, "Duet cannot finish the sign-in", duet.ErrorMessage(err))
		return
	}
	u, _ := url.Parse(req.RedirectURI)
	v := u.Query()
	v.Set("code", code)
	if req.State != "" {
		v.Set("state", req.State)
	}
	v.Set("iss", s.o.Issuer)
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// back sends the person back to the client with an error.
func (s *Server) back(w http.ResponseWriter, r *http.Request, req request, code, desc string) {
	noteError(w, code)
	u, _ := url.Parse(req.RedirectURI)
	v := u.Query()
	v.Set("error", code)
	v.Set("error_description", desc)
	if req.State != "" {
		v.Set("state", req.State)
	}
	v.Set("iss", s.o.Issuer)
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func errText(err error) string {
	var oe *oauthError
	if errors.As(err, &oe) {
		return oe.Desc
	}
	return duet.ErrorMessage(err)
}

// ---- tokens ----

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// clientRequest reads a client's form request to the token or revocation
// endpoint — at most limit bytes, every parameter once — and authenticates
// the client. On failure it has answered and returns false.
func (s *Server) clientRequest(w http.ResponseWriter, r *http.Request, limit int64) (*client, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, errf(http.StatusBadRequest, "invalid_request", "the body must be a form"))
		return nil, false
	}
	if err := once(r.PostForm); err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	c, err := s.authenticateClient(r.Context(), r)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	eventOf(r.Context()).client = c.ID
	return c, true
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientRequest(w, r, 64<<10)
	if !ok {
		return
	}
	var resp *tokenResponse
	var err error
	g := r.PostForm.Get("grant_type")
	switch g {
	case "authorization_code", "refresh_token", GrantJWTBearer:
		eventOf(r.Context()).grant = g
	}
	switch g {
	case "authorization_code":
		resp, err = s.codeGrant(r, c)
	case "refresh_token":
		resp, err = s.refreshGrant(r, c)
	case GrantJWTBearer:
		resp, err = s.assertionGrant(r, c)
	default:
		err = errf(http.StatusBadRequest, "unsupported_grant_type", "grant_type %.60q is not supported", g)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) codeGrant(r *http.Request, c *client) (*tokenResponse, error) {
	ctx := r.Context()
	tok, err := s.o.Store.UseOAuthToken(ctx, duet.OAuthCode, hash(r.PostForm.Get("code")))
	if duet.ErrorCode(err) == duet.CodeConflict && tok != nil {
		// A code used twice leaked: whatever it bought is revoked.
		s.o.Store.RevokeOAuthGrant(ctx, tok.GrantID)
		s.o.Logger.WarnContext(ctx, "oauth: an authorization code was used twice; its grant is revoked", "client", tok.ClientID, "user", tok.UserID)
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the code was already used")
	}
	if err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "invalid or expired code")
	}
	var req request
	if err := json.Unmarshal([]byte(tok.Data), &req); err != nil {
		return nil, err
	}
	if tok.ClientID != c.ID {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the code was issued to another client")
	}
	if r.PostForm.Get("redirect_uri") != "" && r.PostForm.Get("redirect_uri") != req.RedirectURI {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "redirect_uri does not match the authorization request")
	}
	verifier := r.PostForm.Get("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	if verifier == "" || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(req.CodeChallenge)) != 1 {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
	}
	if res := r.PostForm["resource"]; len(res) > 0 && (len(res) > 1 || !s.resourceOK(res[0])) {
		return nil, errf(http.StatusBadRequest, "invalid_target", "the resource is not Duet's MCP endpoint")
	}
	return s.issue(ctx, tok.GrantID, c.ID, tok.UserID, tok.Scope, true)
}

func (s *Server) refreshGrant(r *http.Request, c *client) (*tokenResponse, error) {
	ctx := r.Context()
	tok, err := s.o.Store.UseOAuthToken(ctx, duet.OAuthRefresh, hash(r.PostForm.Get("refresh_token")))
	if duet.ErrorCode(err) == duet.CodeConflict && tok != nil {
		// A refresh token replayed after rotation: it leaked; revoke the
		// sign-in (OAuth 2.1 §4.3.1).
		s.o.Store.RevokeOAuthGrant(ctx, tok.GrantID)
		s.o.Logger.WarnContext(ctx, "oauth: a refresh token was used twice; its grant is revoked", "client", tok.ClientID, "user", tok.UserID)
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the refresh token was already used")
	}
	if err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "invalid or expired refresh token")
	}
	if tok.ClientID != c.ID {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the refresh token was issued to another client")
	}
	scope := tok.Scope
	if want := r.PostForm.Get("scope"); want != "" {
		var narrowed []string
		for _, sc := range strings.Fields(want) {
			if !slices.Contains(strings.Fields(tok.Scope), sc) {
				return nil, errf(http.StatusBadRequest, "invalid_scope", "a refresh cannot add scope %.60q", sc)
			}
			narrowed = append(narrowed, sc)
		}
		scope = strings.Join(narrowed, " ")
	}
	return s.issue(ctx, tok.GrantID, c.ID, tok.UserID, scope, true)
}

// assertionGrant is SEP-990's JWT bearer grant: the identity provider
// issued an ID-JAG for Duet naming the user and the client; Duet checks
// it and issues an access token.
func (s *Server) assertionGrant(r *http.Request, c *client) (*tokenResponse, error) {
	ctx := r.Context()
	if c.SecretHash == "" {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "the JWT bearer grant needs an authenticated (confidential) client")
	}
	claims, err := s.o.Provider.Verify(ctx, r.PostForm.Get("assertion"), auth.Expect{Audience: s.o.Issuer, Types: []string{"oauth-id-jag+jwt"}})
	if duet.ErrorCode(err) == duet.CodeUnavailable {
		return nil, err
	}
	if err != nil {
		s.o.Logger.InfoContext(ctx, "oauth: identity assertion refused", "err", err)
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the assertion is not an identity assertion for Duet from the identity provider")
	}
	if claims.String("client_id") != c.ID {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the assertion was issued to another client")
	}
	if res := claims.String("resource"); res != "" && !s.resourceOK(res) {
		return nil, errf(http.StatusBadRequest, "invalid_target", "the assertion is for another resource")
	}
	user, err := auth.UserFromClaims(claims, s.o.UserClaim)
	if err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "%s", duet.ErrorMessage(err))
	}
	// The provider's scope claim bounds what the assertion buys (none: any
	// of Duet's scopes); the client may ask for less, never more.
	scope, ok := s.scopeFor(strings.Join(claims.Scopes(), " ")) // scope, or scp as some providers write it
	if !ok {
		return nil, errf(http.StatusBadRequest, "invalid_scope", "the assertion allows none of Duet's scopes (%s)", strings.Join(s.o.Scopes.All(), " "))
	}
	if want := r.PostForm.Get("scope"); want != "" {
		allowed := strings.Fields(scope)
		for _, sc := range strings.Fields(want) {
			if slices.Contains(s.o.Scopes.All(), sc) && !slices.Contains(allowed, sc) {
				return nil, errf(http.StatusBadRequest, "invalid_scope", "the assertion does not allow scope %.60q", sc)
			}
		}
		asked, ok := s.scopeFor(want)
		if !ok {
			return nil, errf(http.StatusBadRequest, "invalid_scope", "Duet's scopes are %s", strings.Join(s.o.Scopes.All(), " "))
		}
		// What was asked, within what the assertion allows (asking for
		// none of Duet's scopes means all of them: all it allows).
		scope = strings.Join(slices.DeleteFunc(strings.Fields(asked), func(sc string) bool { return !slices.Contains(allowed, sc) }), " ")
	}
	if err := s.spendAssertion(ctx, claims, c.ID, user); err != nil {
		return nil, err
	}
	return s.issue(ctx, duet.NewID("grant"), c.ID, user, scope, false)
}

// kindAssertion marks the record of an identity assertion already
// exchanged (its issuer and jti), kept until the assertion expires.
const kindAssertion duet.OAuthTokenKind = "assertion"

// spendAssertion records an identity assertion as used, once: an ID-JAG
// carries a jti (its unique id), and the same one presented again before
// it expires is refused (a leaked assertion is not a second sign-in).
func (s *Server) spendAssertion(ctx context.Context, claims *auth.Claims, clientID, user string) error {
	if claims.ID == "" || claims.Expiry == nil {
		return errf(http.StatusBadRequest, "invalid_grant", "the assertion has no jti")
	}
	now := s.o.Now()
	expires := claims.Expiry.Time().Add(time.Minute) // past the verifier's leeway
	if expires.Before(now.Add(time.Minute)) {
		expires = now.Add(time.Minute)
	}
	err := s.o.Store.PutOAuthToken(ctx, &duet.OAuthToken{Hash: hash("assertion:" + claims.Issuer + "\x00" + claims.ID), Kind: kindAssertion,
		ClientID: clientID, UserID: user, CreatedAt: now, ExpiresAt: expires})
	if duet.ErrorCode(err) == duet.CodeConflict {
		s.o.Logger.WarnContext(ctx, "oauth: an identity assertion was presented twice", "client", clientID, "user", user)
		return errf(http.StatusBadRequest, "invalid_grant", "the assertion was already used")
	}
	return err
}

// issue stores and returns a new access token (and refresh token) of a
// grant.
func (s *Server) issue(ctx context.Context, grant, clientID, user, scope string, refresh bool) (*tokenResponse, error) {
	eventOf(ctx).user = user
	now := s.o.Now()
	at := newSecret(auth.AccessTokenPrefix)
	if err := s.o.Store.PutOAuthToken(ctx, &duet.OAuthToken{Hash: hash(at), Kind: duet.OAuthAccess, GrantID: grant, ClientID: clientID,
		UserID: user, Scope: scope, CreatedAt: now, ExpiresAt: now.Add(s.o.AccessTTL)}); err != nil {
		return nil, err
	}
	resp := &tokenResponse{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(s.o.AccessTTL / time.Second), Scope: scope}
	if refresh {
		rt := newSecret(auth.RefreshTokenPrefix)
		if err := s.o.Store.PutOAuthToken(ctx, &duet.OAuthToken{Hash: hash(rt), Kind: duet.OAuthRefresh, GrantID: grant, ClientID: clientID,
			UserID: user, Scope: scope, CreatedAt: now, ExpiresAt: now.Add(s.o.RefreshTTL)}); err != nil {
			return nil, err
		}
		resp.RefreshToken = rt
	}
	return resp, nil
}

// revoke is token revocation (RFC 7009): revoking an access or refresh
// token revokes the whole sign-in (grant) it belongs to. An unknown token
// is not an error.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	c, ok := s.clientRequest(w, r, 16<<10)
	if !ok {
		return
	}
	h := hash(r.PostForm.Get("token"))
	for _, kind := range []duet.OAuthTokenKind{duet.OAuthAccess, duet.OAuthRefresh} {
		tok, err := s.o.Store.FindOAuthToken(r.Context(), kind, h)
		if err != nil {
			continue
		}
		if tok.ClientID == c.ID {
			eventOf(r.Context()).user = tok.UserID
			if err := s.o.Store.RevokeOAuthGrant(r.Context(), tok.GrantID); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		break
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// ---- pages ----

var pages = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Duet</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:4em auto;padding:0 1em;color:#222}
h1{font-size:1.4em}ul{padding-left:1.2em}.who{color:#555}button{font:inherit;padding:.5em 1.4em;margin-right:.6em;border-radius:6px;border:1px solid #888;background:#fff}
button[value=allow]{background:#1f6feb;color:#fff;border-color:#1f6feb}code{background:#f3f3f3;padding:0 .2em}</style></head><body>
<h1>{{.Title}}</h1>
{{if .Consent}}
<p><strong>{{.Client}}</strong> wants to use Duet as <strong>{{.User}}</strong>.</p>
<p class="who">It will return to <code>{{.Redirect}}</code>.</p>
<p>It will be able to:</p><ul>{{range .Grants}}<li>{{.}}</li>{{end}}</ul>
<form method="post" action="{{.Action}}"><input type="hidden" name="consent" value="{{.Consent}}">
<button name="action" value="allow" type="submit">Allow</button><button name="action" value="deny" type="submit">Deny</button></form>
<p class="who">You can revoke this later by signing out in the application.</p>
{{else}}<p>{{.Text}}</p>{{end}}
</body></html>`))

type pageData struct {
	Title, Text                             string
	Client, User, Redirect, Consent, Action string
	Grants                                  []string
}

func (s *Server) page(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	pages.Execute(w, pageData{Title: title, Text: text})
}

func (s *Server) consentPage(w http.ResponseWriter, req request, user, consent string) {
	name := req.DisplayName
	if name == "" {
		name = req.ClientID
	}
	var grants []string
	for _, sc := range strings.Fields(req.Scope) {
		switch sc {
		case s.o.Scopes.Read:
			grants = append(grants, "read the tasks, cases, runs and results you can see ("+sc+")")
		case s.o.Scopes.Run:
			grants = append(grants, "start and cancel test runs as you ("+sc+")")
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	// form-action is left open: the answer redirects to the client's address.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	pages.Execute(w, pageData{Title: "Allow access to Duet?", Client: name, User: user, Redirect: req.RedirectURI,
		Consent: consent, Action: s.o.Issuer + PathConsent, Grants: grants})
}

// buckets are token buckets by key: each holds up to its capacity and
// refills that many per period.
type buckets struct {
	mu  sync.Mutex
	now func() time.Time
	per time.Duration
	n   map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token from the bucket of each key (capacity caps[i])
// when every one has one, and returns 0; else it takes none and returns
// how long until they would.
func (b *buckets) take(keys []string, caps []int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if len(b.n) > 10000 { // forget the addresses whose bucket is full again
		last := float64(caps[len(caps)-1])
		for k, bk := range b.n {
			if k != "" && b.refill(bk, last, now) >= last {
				delete(b.n, k)
			}
		}
	}
	var wait time.Duration
	for i, k := range keys {
		bk := b.n[k]
		c := float64(caps[i])
		if bk == nil {
			bk = &bucket{tokens: c, at: now}
			b.n[k] = bk
		}
		bk.tokens, bk.at = b.refill(bk, c, now), now
		if bk.tokens < 1 {
			wait = max(wait, time.Duration((1-bk.tokens)/c*float64(b.per)))
		}
	}
	if wait > 0 {
		return wait
	}
	for _, k := range keys {
		b.n[k].tokens--
	}
	return 0
}

// refill is what bk, of capacity c, holds at now.
func (b *buckets) refill(bk *bucket, c float64, now time.Time) float64 {
	return min(c, bk.tokens+float64(now.Sub(bk.at))/float64(b.per)*c)
}

// ---- audit ----

// event is what one request to the server leaves in the audit trail; the
// handlers fill it in as they learn who and which client it concerns.
type event struct {
	user, client, grant string
	oauthCode           string // the RFC 6749 error answered, if any
	status              int
}

type eventKey struct{}

// eventOf returns the request's event (a throwaway one outside audited).
func eventOf(ctx context.Context) *event {
	if ev, ok := ctx.Value(eventKey{}).(*event); ok {
		return ev
	}
	return &event{}
}

// auditWriter notes the status a handler answered.
type auditWriter struct {
	http.ResponseWriter
	ev *event
}

func (w *auditWriter) WriteHeader(status int) {
	if w.ev.status == 0 {
		w.ev.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	if w.ev.status == 0 {
		w.ev.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// noteError records the OAuth error a handler answered through w.
func noteError(w http.ResponseWriter, code string) {
	if aw, ok := w.(*auditWriter); ok && aw.ev.oauthCode == "" {
		aw.ev.oauthCode = code
	}
}

// audited runs h and leaves one audit record of the request: call source
// oauth, the user it concerned once known, the client as the record's
// tool, the outcome as a stable code.
// A change the request makes (a client registered, a code or a token
// issued, a token revoked) stores the record in its own transaction, as a
// governed call's does (duet.AuditIntent); it is completed at the end.
func (s *Server) audited(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ev := &event{}
		caller, _ := duet.CallerFromContext(r.Context())
		trace := caller.TraceID
		if trace == "" {
			trace = duet.NewTraceID()
		}
		record := func() duet.AuditRecord {
			m := method
			if ev.grant != "" {
				m += ":" + ev.grant
			}
			return duet.AuditRecord{Time: start, TraceID: trace, CallSource: duet.SourceOAuth, Caller: clip(ev.user), Method: m,
				Tool: clip(ev.client), ArgBytes: int(max(r.ContentLength, 0))}
		}
		ctx := context.WithValue(r.Context(), eventKey{}, ev)
		var intent *duet.AuditIntent
		if s.o.Audit != nil {
			intent = duet.NewAuditIntentFunc(record)
			ctx = duet.WithAuditIntent(ctx, intent)
		}
		h(&auditWriter{ResponseWriter: w, ev: ev}, r.WithContext(ctx))
		if s.o.Audit == nil {
			return
		}
		rec := record()
		rec.ID, rec.Outcome, rec.DurationUs = intent.Close(), outcome(ev), time.Since(start).Microseconds()
		s.o.Audit(&rec)
	}
}

// outcome maps what the server answered to the stable code of the audit
// trail.
func outcome(ev *event) duet.Code {
	switch ev.oauthCode {
	case "":
		switch {
		case ev.status < 400:
			return duet.OutcomeOK
		case ev.status == http.StatusRequestEntityTooLarge:
			return duet.CodeTooLarge
		case ev.status == http.StatusTooManyRequests:
			return duet.CodeRateLimited
		case ev.status == http.StatusForbidden:
			return duet.CodePermissionDenied
		case ev.status == http.StatusServiceUnavailable || ev.status == http.StatusBadGateway:
			return duet.CodeUnavailable
		case ev.status >= 500:
			return duet.CodeInternal
		}
		return duet.CodeInvalidArgument
	case "invalid_client":
		return duet.CodeUnauthenticated
	case "invalid_grant", "unauthorized_client", "access_denied":
		return duet.CodePermissionDenied
	case "temporarily_unavailable":
		if ev.status == http.StatusTooManyRequests {
			return duet.CodeRateLimited
		}
		return duet.CodeUnavailable
	case "server_error":
		return duet.CodeInternal
	}
	if ev.status == http.StatusRequestEntityTooLarge {
		return duet.CodeTooLarge
	}
	return duet.CodeInvalidArgument
}

// clip bounds a value a client chose before it is kept: at most 200
// bytes of valid UTF-8.
func clip(v string) string {
	if len(v) > 200 {
		v = v[:200]
	}
	return strings.ToValidUTF8(v, "")
}
