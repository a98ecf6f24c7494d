package mcptest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AuthOptions configure an [AuthServer].
type AuthOptions struct {
	// Prefix starts every token and client secret it issues (so that a test
	// can look for them where they must not be); "" means "tok".
	Prefix string
	// TokenTTL is the lifetime of access tokens; 0 means an hour.
	TokenTTL time.Duration
	// Scopes are listed as scopes_supported (and offline_access with them).
	Scopes []string
	// Clients are pre-registered confidential clients: id → secret.
	Clients map[string]string
	// KeyClients are pre-registered clients that authenticate with a signed
	// JWT (private_key_jwt, ES256): id → public key.
	KeyClients map[string]*ecdsa.PublicKey
	// AuthMethods are the token endpoint's client authentication methods;
	// nil means client_secret_basic, client_secret_post, private_key_jwt and
	// none.
	AuthMethods []string
	// NoRegistration disables dynamic client registration.
	NoRegistration bool
	// Deny makes the authorization endpoint refuse (access_denied).
	Deny bool
	// Withhold are scopes never granted, even when asked for (the token
	// response names the scopes granted).
	Withhold []string
	// UnadvertisedIss makes the metadata omit
	// authorization_response_iss_parameter_supported while authorization
	// responses still carry iss (RFC 9207), as some providers do.
	UnadvertisedIss bool

	// A hostile authorization server: GrantExtra is appended to the scope
	// of every token response, ClientIDPrefix starts every dynamically
	// registered client id (control characters, say).
	GrantExtra     string
	ClientIDPrefix string

	// OnRefresh, if set, is called (without the server's lock) before a
	// refresh_token grant is answered: a test can act "at the same time".
	OnRefresh func()
}

// AuthServer is a small OAuth 2.1 authorization server for tests of the
// OAuth client, as strict as a real provider: metadata (RFC 8414),
// dynamic client registration (RFC 7591), an authorization endpoint that
// approves at once (it redirects back with a code and iss, RFC 9207, as if
// the person had approved), and a token endpoint for the authorization code
// (PKCE S256 checked, RFC 8707 resource checked), refresh token (rotated;
// the resource must be the grant's; a refresh token used twice revokes the
// whole grant, RFC 9700 section 4.14.2) and client credentials grants, with
// client_secret_basic, client_secret_post, private_key_jwt (alg, typ,
// audience, lifetime checked; a jti used twice is refused) or no client
// authentication. Access tokens are bound to their resource: a server
// accepts only tokens issued for it ([AuthServer.Verifier]).
type AuthServer struct {
	URL  string // the issuer
	opts AuthOptions

	Registrations  atomic.Int64
	Authorizations atomic.Int64
	CodeGrants     atomic.Int64
	Refreshes      atomic.Int64
	ClientGrants   atomic.Int64 // client_credentials
	ReusedRefresh  atomic.Int64 // refresh tokens presented again after rotation (each revoked its grant)

	mu       sync.Mutex
	clients  map[string]*asClient
	codes    map[string]*grant
	access   map[string]*grant
	refresh  map[string]*grant
	spent    map[string]string    // rotated refresh token → its grant's family
	jtis     map[string]time.Time // client assertion ids seen, until they expire
	families int
	issued   []string
	lastAuth url.Values
	lastTok  url.Values
	methods  []string // client authentication methods used at the token endpoint
}

type asClient struct {
	secret   string
	key      *ecdsa.PublicKey
	redirect []string
}

type grant struct {
	family    string // every token descending from one authorization
	client    string
	scopes    []string
	resource  string
	redirect  string
	challenge string
	expires   time.Time
}

// NewAuthServer starts an authorization server on 127.0.0.1 for the test.
func NewAuthServer(tb testing.TB, opts AuthOptions) *AuthServer {
	tb.Helper()
	if opts.Prefix == "" {
		opts.Prefix = "tok"
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	if opts.AuthMethods == nil {
		opts.AuthMethods = []string{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"}
	}
	as := &AuthServer{opts: opts, clients: map[string]*asClient{}, codes: map[string]*grant{}, access: map[string]*grant{}, refresh: map[string]*grant{},
		spent: map[string]string{}, jtis: map[string]time.Time{}}
	for id, secret := range opts.Clients {
		as.clients[id] = &asClient{secret: secret}
	}
	for id, key := range opts.KeyClients {
		as.clients[id] = &asClient{key: key}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", as.metadata)
	mux.HandleFunc("POST /register", as.register)
	mux.HandleFunc("GET /authorize", as.authorize)
	mux.HandleFunc("POST /token", as.token)
	srv := httptest.NewUnstartedServer(mux)
	as.URL = "http://" + srv.Listener.Addr().String()
	srv.Start()
	tb.Cleanup(srv.Close)
	return as
}

func (as *AuthServer) newSecret(kind string) string {
	b := make([]byte, 12)
	rand.Read(b)
	s := as.opts.Prefix + "-" + kind + "-" + hex.EncodeToString(b)
	as.issued = append(as.issued, s)
	return s
}

// Issued returns every access token, refresh token and client secret the
// server issued.
func (as *AuthServer) Issued() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.issued)
}

// LastAuthorization returns the parameters of the last authorization
// request.
func (as *AuthServer) LastAuthorization() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.lastAuth
}

// LastTokenRequest returns the form of the last token request.
func (as *AuthServer) LastTokenRequest() url.Values {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.lastTok
}

// AuthMethodsUsed returns the client authentication methods token requests
// used, in order.
func (as *AuthServer) AuthMethodsUsed() []string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return slices.Clone(as.methods)
}

// RevokeAccess makes every access token issued so far invalid (refresh
// tokens stay valid).
func (as *AuthServer) RevokeAccess() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.access)
}

// RevokeAll makes every token issued so far invalid.
func (as *AuthServer) RevokeAll() {
	as.mu.Lock()
	defer as.mu.Unlock()
	clear(as.access)
	clear(as.refresh)
}

// Verifier returns an auth.TokenVerifier for the server's access tokens
// issued for resource (their audience, RFC 8707): a token issued for
// another resource, or for none, is invalid there.
func (as *AuthServer) Verifier(resource string) auth.TokenVerifier {
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		as.mu.Lock()
		defer as.mu.Unlock()
		g := as.access[token]
		if g == nil || time.Now().After(g.expires) || g.resource != resource {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: g.scopes, Expiration: g.expires, UserID: g.client}, nil
	}
}

// revokeFamilyLocked makes every token of one grant invalid.
func (as *AuthServer) revokeFamilyLocked(family string) {
	for k, g := range as.access {
		if g.family == family {
			delete(as.access, k)
		}
	}
	for k, g := range as.refresh {
		if g.family == family {
			delete(as.refresh, k)
		}
	}
}

func (as *AuthServer) newFamilyLocked() string {
	as.families++
	return fmt.Sprintf("grant-%d", as.families)
}

func (as *AuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	m := &oauthex.AuthServerMeta{Issuer: as.URL, AuthorizationEndpoint: as.URL + "/authorize", TokenEndpoint: as.URL + "/token",
		ResponseTypesSupported: []string{"code"}, CodeChallengeMethodsSupported: []string{"S256"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token", "client_credentials"},
		TokenEndpointAuthMethodsSupported: as.opts.AuthMethods, TokenEndpointAuthSigningAlgValuesSupported: []string{"ES256"},
		AuthorizationResponseIssParameterSupported: !as.opts.UnadvertisedIss}
	if len(as.opts.Scopes) > 0 {
		m.ScopesSupported = append(slices.Clone(as.opts.Scopes), "offline_access")
	}
	if !as.opts.NoRegistration {
		m.RegistrationEndpoint = as.URL + "/register"
	}
	writeJSON(w, http.StatusOK, m)
}

func (as *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	if as.opts.NoRegistration {
		http.NotFound(w, r)
		return
	}
	var md oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	as.Registrations.Add(1)
	as.mu.Lock()
	id := fmt.Sprintf("%sdcr-%d", as.opts.ClientIDPrefix, len(as.clients)+1)
	c := &asClient{redirect: md.RedirectURIs}
	method := md.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic"
	}
	if method != "none" {
		c.secret = as.newSecret("cs")
	}
	as.clients[id] = c
	as.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "client_secret": c.secret, "redirect_uris": md.RedirectURIs,
		"token_endpoint_auth_method": method, "grant_types": md.GrantTypes})
}

func (as *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	as.Authorizations.Add(1)
	as.mu.Lock()
	as.lastAuth = q
	c := as.clients[q.Get("client_id")]
	as.mu.Unlock()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case c == nil:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case err != nil || redirect.Host == "" || len(c.redirect) > 0 && !slices.Contains(c.redirect, q.Get("redirect_uri")):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	}
	back := redirect.Query()
	back.Set("state", q.Get("state"))
	back.Set("iss", as.URL) // RFC 9207
	switch {
	case as.opts.Deny:
		back.Set("error", "access_denied")
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		back.Set("error", "invalid_request")
		back.Set("error_description", "PKCE S256 is required")
	default:
		as.mu.Lock()
		code := as.newSecret("code")
		as.codes[code] = &grant{family: as.newFamilyLocked(), client: q.Get("client_id"), scopes: as.grantable(q.Get("scope")), resource: q.Get("resource"),
			redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge")}
		as.mu.Unlock()
		back.Set("code", code)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (as *AuthServer) grantable(scope string) []string {
	return slices.DeleteFunc(strings.Fields(scope), func(s string) bool { return slices.Contains(as.opts.Withhold, s) })
}

func tokenError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (as *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	f := r.PostForm
	if f.Get("grant_type") == "refresh_token" && as.opts.OnRefresh != nil {
		as.opts.OnRefresh()
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	as.lastTok = f
	id, method, ok := as.authenticate(r, f)
	if !ok {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	as.methods = append(as.methods, method)
	var g *grant
	rotate := true
	switch f.Get("grant_type") {
	case "authorization_code":
		c := as.codes[f.Get("code")]
		delete(as.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case c == nil || c.client != id:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown code")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
			return
		case f.Get("redirect_uri") != c.redirect || f.Get("resource") != c.resource:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri or resource differs from the authorization request")
			return
		}
		as.CodeGrants.Add(1)
		g = c
	case "refresh_token":
		rt := f.Get("refresh_token")
		if family, ok := as.spent[rt]; ok {
			// A rotated refresh token used again: someone holds a copy.
			// Revoke the whole grant (RFC 9700 section 4.14.2).
			as.ReusedRefresh.Add(1)
			as.revokeFamilyLocked(family)
			tokenError(w, http.StatusBadRequest, "invalid_grant", "refresh token reused; the grant is revoked")
			return
		}
		old := as.refresh[rt]
		switch {
		case old == nil || old.client != id:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return
		case f.Get("resource") != old.resource:
			// RFC 8707: the resource of a refresh is the grant's.
			tokenError(w, http.StatusBadRequest, "invalid_target", "the resource differs from the grant's")
			return
		}
		as.Refreshes.Add(1)
		delete(as.refresh, rt)
		as.spent[rt] = old.family
		g = old
	case "client_credentials":
		if method == "none" {
			tokenError(w, http.StatusUnauthorized, "invalid_client", "the client credentials grant needs a confidential client")
			return
		}
		as.ClientGrants.Add(1)
		g = &grant{family: as.newFamilyLocked(), client: id, scopes: as.grantable(f.Get("scope")), resource: f.Get("resource")}
		rotate = false
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", f.Get("grant_type"))
		return
	}
	at := as.newSecret("at")
	ng := *g
	ng.expires = time.Now().Add(as.opts.TokenTTL)
	as.access[at] = &ng
	out := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(as.opts.TokenTTL.Seconds() + 0.5),
		"scope": strings.Join(g.scopes, " ") + as.opts.GrantExtra}
	if rotate {
		rt := as.newSecret("rt")
		as.refresh[rt] = g
		out["refresh_token"] = rt
	}
	writeJSON(w, http.StatusOK, out)
}

// authenticate identifies the client of a token request. Called with mu
// held.
func (as *AuthServer) authenticate(r *http.Request, f url.Values) (id, method string, ok bool) {
	allowed := func(m string) bool { return slices.Contains(as.opts.AuthMethods, m) }
	if u, p, basic := r.BasicAuth(); basic {
		u, _ = url.QueryUnescape(u)
		p, _ = url.QueryUnescape(p)
		c := as.clients[u]
		return u, "client_secret_basic", allowed("client_secret_basic") && c != nil && c.secret != "" &&
			subtle.ConstantTimeCompare([]byte(c.secret), []byte(p)) == 1
	}
	if a := f.Get("client_assertion"); a != "" {
		id, ok := as.verifyAssertion(a)
		return id, "private_key_jwt", ok && allowed("private_key_jwt") &&
			f.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	}
	id = f.Get("client_id")
	c := as.clients[id]
	switch {
	case c == nil:
		return id, "", false
	case f.Get("client_secret") != "":
		return id, "client_secret_post", allowed("client_secret_post") && subtle.ConstantTimeCompare([]byte(c.secret), []byte(f.Get("client_secret"))) == 1
	}
	return id, "none", allowed("none") && c.secret == "" && c.key == nil
}

// maxAssertionLifetime is the longest a client assertion may be valid.
const maxAssertionLifetime = 10 * time.Minute

// verifyAssertion checks a client assertion (RFC 7523 section 3) the way a
// strict provider does: the header names ES256 (the only algorithm the
// metadata lists) and, if it has a typ, JWT or client-authentication+jwt;
// the ES256 signature by a key client; iss = sub = that client; aud = the
// issuer; exp within maxAssertionLifetime; a jti never seen before (a
// replayed assertion is refused). Called with mu held.
func (as *AuthServer) verifyAssertion(jwt string) (string, bool) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "", false
	}
	var header struct {
		Alg, Typ string
	}
	var claims struct {
		Iss, Sub, Aud, Jti string
		Exp, Iat           int64
	}
	head, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	payload, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	if err1 != nil || err2 != nil || json.Unmarshal(head, &header) != nil || json.Unmarshal(payload, &claims) != nil {
		return "", false
	}
	if header.Alg != "ES256" || header.Typ != "" && header.Typ != "JWT" && header.Typ != "client-authentication+jwt" {
		return "", false
	}
	now := time.Now()
	c := as.clients[claims.Iss]
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if c == nil || c.key == nil || err != nil || len(sig) != 64 || claims.Sub != claims.Iss ||
		strings.TrimSuffix(claims.Aud, "/") != as.URL || now.Unix() > claims.Exp ||
		time.Unix(claims.Exp, 0).After(now.Add(maxAssertionLifetime)) || claims.Iat > now.Unix()+5 || claims.Jti == "" {
		return "", false
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	rr, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(c.key, digest[:], rr, ss) {
		return "", false
	}
	for j, until := range as.jtis {
		if now.After(until) {
			delete(as.jtis, j)
		}
	}
	if _, seen := as.jtis[claims.Iss+" "+claims.Jti]; seen {
		return "", false
	}
	as.jtis[claims.Iss+" "+claims.Jti] = time.Unix(claims.Exp, 0)
	return claims.Iss, true
}

// Protection says what a [Protected] server demands.
type Protection struct {
	// Scopes are needed for every request.
	Scopes []string
	// CallScopes are needed too for tools/call (a step-up).
	CallScopes []string
	// PublicInitialize lets initialize through without a token.
	PublicInitialize bool
	// Moved, when it holds an authorization server, is where the server
	// says it moved: its metadata and the tokens it accepts are that
	// server's from then on.
	Moved *atomic.Pointer[AuthServer]
}

// Protected serves s (stateful Streamable HTTP) at /mcp to requests with an
// access token of as carrying the scopes p demands: without a valid token
// the answer is 401, without the scopes 403 insufficient_scope, each with a
// WWW-Authenticate challenge naming the protected resource metadata (served
// at /.well-known/oauth-protected-resource/mcp) and the scopes. It returns
// the MCP endpoint's URL.
func Protected(tb testing.TB, s *mcp.Server, as *AuthServer, p Protection) string {
	tb.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	base := "http://" + srv.Listener.Addr().String()
	endpoint, prmURL := base+"/mcp", base+"/.well-known/oauth-protected-resource/mcp"
	mcpHandler := Streamable(s, false, false)
	current := func() *AuthServer {
		if p.Moved != nil {
			if m := p.Moved.Load(); m != nil {
				return m
			}
		}
		return as
	}
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: endpoint,
			AuthorizationServers: []string{current().URL}, ScopesSupported: union(p.Scopes, p.CallScopes), BearerMethodsSupported: []string{"header"}}).ServeHTTP(w, r)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		method := ""
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
			}
			json.Unmarshal(body, &m)
			method = m.Method
		}
		if p.PublicInitialize && (method == "initialize" || strings.HasPrefix(method, "notifications/")) {
			mcpHandler.ServeHTTP(w, r)
			return
		}
		need := p.Scopes
		if method == "tools/call" {
			need = union(need, p.CallScopes)
		}
		challenge := fmt.Sprintf(`Bearer resource_metadata=%q`, prmURL)
		if len(need) > 0 {
			challenge += fmt.Sprintf(`, scope=%q`, strings.Join(need, " "))
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		info, err := current().Verifier(endpoint)(r.Context(), tok, r)
		if !ok || err != nil {
			w.Header().Set("WWW-Authenticate", challenge+`, error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		for _, sc := range need {
			if !slices.Contains(info.Scopes, sc) {
				w.Header().Set("WWW-Authenticate", challenge+`, error="insufficient_scope"`)
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		mcpHandler.ServeHTTP(w, r)
	})
	srv.Start()
	tb.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return endpoint
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
