package oauthserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
)

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
	q, c, redirect, ok := s.authorizationClient(w, r)
	if !ok {
		return
	}
	scope, code, desc := s.checkAuthorization(q)
	if code != "" {
		s.back(w, r, request{RedirectURI: redirect, State: q.Get("state")}, code, desc)
		return
	}
	s.startLogin(w, r, c, q, redirect, scope)
}

// authorizationClient reads an authorization request: its parameters,
// each once, the client and the redirect URI the answer goes to (one the
// client registered). When any is wrong it shows the person why — nothing
// goes back to the client — and returns false.
func (s *Server) authorizationClient(w http.ResponseWriter, r *http.Request) (q url.Values, c *client, redirect string, ok bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		err = once(q)
	}
	if err != nil {
		s.page(w, http.StatusBadRequest, "This request cannot be read", errText(err)+". Nothing was sent to the application.")
		return nil, nil, "", false
	}
	eventOf(r.Context()).client = clip(q.Get("client_id"))
	c, err = s.findClient(r.Context(), q.Get("client_id"))
	if err != nil {
		s.page(w, http.StatusBadRequest, "This application is not known to Duet", errText(err))
		return nil, nil, "", false
	}
	redirect = q.Get("redirect_uri")
	if redirect == "" && len(c.RedirectURIs) == 1 {
		redirect = c.RedirectURIs[0]
	}
	if !c.redirectAllowed(redirect) {
		s.page(w, http.StatusBadRequest, "Redirect address not registered", "The application asked to return to an address it did not register. Nothing was sent to it.")
		return nil, nil, "", false
	}
	return q, c, redirect, true
}

// checkAuthorization checks an authorization request q and returns the
// scope it grants, or the error code and description to send back.
func (s *Server) checkAuthorization(q url.Values) (scope, code, desc string) {
	switch {
	case q.Get("response_type") != "code":
		return "", "unsupported_response_type", "response_type must be code"
	case !validChallenge(q.Get("code_challenge")) || q.Get("code_challenge_method") != "S256":
		return "", "invalid_request", "PKCE is required: code_challenge (43 base64url characters) with code_challenge_method=S256"
	case len(q.Get("state")) > maxState:
		// The request is kept until the person returns: bounded first.
		return "", "invalid_request", fmt.Sprintf("state is over %d bytes", maxState)
	case !s.resourcesOK(q["resource"]):
		return "", "invalid_target", "the resource is not Duet's MCP endpoint"
	}
	scope, ok := s.scopeFor(q.Get("scope"))
	if !ok {
		return "", "invalid_scope", "Duet's scopes are " + strings.Join(s.o.Scopes.All(), " ")
	}
	return scope, "", ""
}

// startLogin keeps the authorization request q of client c and sends the
// person to the identity provider to sign in, in a browser Duet marks
// with a cookie.
func (s *Server) startLogin(w http.ResponseWriter, r *http.Request, c *client, q url.Values, redirect, scope string) {
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

// resourcesOK checks the resource parameters of a request (RFC 8707) the
// same way at every endpoint that takes them — authorization, code
// exchange, refresh: none, or Duet's own resource once.
func (s *Server) resourcesOK(res []string) bool {
	return len(res) == 0 || len(res) == 1 && s.resourceOK(res[0])
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

// back sends the person back to the client with an error.
func (s *Server) back(w http.ResponseWriter, r *http.Request, req request, code, desc string) {
	noteError(w, code) // the audit's outcome is the refusal, not the redirect
	s.redirect(w, r, req, "error", code, "error_description", desc)
}

// redirect sends the person back to the client's redirect URI with the
// query parameters kv (name, value, ...), the client's state and Duet's
// issuer (RFC 9207).
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, req request, kv ...string) {
	u, _ := url.Parse(req.RedirectURI)
	v := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	if req.State != "" {
		v.Set("state", req.State)
	}
	v.Set("iss", s.o.Issuer)
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// useSignIn redeems the single-use token of a sign-in in progress (kind:
// the login that comes back from the identity provider, the consent form)
// whose secret the browser sent, and returns it with the authorization
// request it carries. An expired token, or one started in another browser,
// gets a page that says so, and false.
func (s *Server) useSignIn(w http.ResponseWriter, r *http.Request, kind duet.OAuthTokenKind, secret string) (*duet.OAuthToken, request, bool) {
	var req request
	tok, err := s.o.Store.UseOAuthToken(r.Context(), kind, hash(secret))
	if err != nil {
		s.page(w, http.StatusBadRequest, "This sign-in has expired", "Start again from your application.")
		return nil, req, false
	}
	if err := json.Unmarshal([]byte(tok.Data), &req); err != nil || !browserOwns(r, req) {
		s.page(w, http.StatusBadRequest, "This sign-in was started in another browser", "Start again from your application, in this browser.")
		return nil, req, false
	}
	return tok, req, true
}
