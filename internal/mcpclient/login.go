package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/serverkey"
)

// AuthStatus describes the OAuth authorization of a registration, without
// any secret.
type AuthStatus struct {
	Auth       string     `json:"auth"`
	Authorized bool       `json:"authorized"`
	Scopes     []string   `json:"scopes,omitempty"`   // granted
	Obtained   *time.Time `json:"obtained,omitempty"` // when the token was obtained
	Expires    *time.Time `json:"expires,omitempty"`
	Renewable  bool       `json:"renewable"`          // a refresh token, or the client credentials grant
	ClientID   string     `json:"clientId,omitempty"` // the OAuth client Duet is at the authorization server
	// Issuer is the authorization server the client is bound to (given at
	// registration or pinned at the first authorization); "" when unbound.
	Issuer string   `json:"issuer,omitempty"`
	Wanted []string `json:"wantedScopes,omitempty"`
}

func statusOf(sec *oauthSecret) *AuthStatus {
	s := &AuthStatus{Auth: sec.Grant, Wanted: sec.Want, ClientID: sec.ClientID, Issuer: sec.Issuer}
	if sec.MetadataURL != "" && s.ClientID == "" {
		s.ClientID = sec.MetadataURL
	}
	if t := sec.Token; t != nil {
		s.Authorized, s.Scopes, s.ClientID = true, t.Scopes, t.ClientID
		s.Renewable = t.Refresh != "" || sec.Grant == duet.AuthClientCredentials
		obtained := t.Obtained
		s.Obtained = &obtained
		if !t.Expiry.IsZero() {
			exp := t.Expiry.UTC()
			s.Expires = &exp
		}
	}
	return s
}

// AuthStatus returns the OAuth status of the owner's registration ref (name
// or serverKey); nil when it does not use OAuth. Returns NOT_FOUND,
// UNAVAILABLE, INTERNAL.
func (c *Client) AuthStatus(ctx context.Context, owner, ref string) (*AuthStatus, error) {
	reg, err := c.store.FindMCPServer(ctx, owner, ref)
	if err != nil {
		return nil, err
	}
	if reg.Auth == "" {
		return nil, nil
	}
	sec, err := c.secret(ctx, reg)
	if err != nil {
		return nil, err
	}
	if sec.OAuth == nil {
		return nil, duet.Errorf(duet.CodeInternal, "the OAuth configuration of MCP server %s is missing from its credential", reg.Name)
	}
	return statusOf(sec.OAuth), nil
}

// Login authorizes Duet to call the owner's OAuth registration ref (name or
// serverKey) and stores the tokens, sealed, in its credential; calls then use
// and renew them. For duet.AuthOAuth it runs the authorization code flow with
// PKCE, asking the person through the [Authorizer] in ctx (see
// [WithAuthorizer]) and requesting the scopes the server asks for, any it
// asked for since, and the registered ones; for duet.AuthClientCredentials
// it runs the client credentials grant. It always authorizes anew, whatever
// is stored.
// Returns NOT_FOUND, INVALID_ARGUMENT (not an OAuth registration, or no
// Authorizer for the authorization code flow), MCP_AUTH_FAILED, URL_REFUSED,
// MCP_UNREACHABLE, MCP_CALL_TIMEOUT, CANCELLED, UNAVAILABLE, INTERNAL.
func (c *Client) Login(ctx context.Context, owner, ref string) (*AuthStatus, error) {
	reg, err := c.store.FindMCPServer(ctx, owner, ref)
	if err != nil {
		return nil, err
	}
	if reg.Auth == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument,
			"MCP server %s is registered without OAuth; to use OAuth, register it again: `duet server add --as %s --name %s --url %s --auth oauth --replace`",
			reg.Name, owner, reg.Name, reg.URL)
	}
	if reg.Auth == duet.AuthOAuth && authorizerFrom(ctx) == nil {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "authorizing as a person needs someone at a browser: run `duet server login --as %s %s`", owner, reg.Name)
	}
	sec, ver, err := c.loadSecret(ctx, reg)
	if err != nil {
		return nil, err
	}
	if sec.OAuth == nil {
		return nil, duet.Errorf(duet.CodeInternal, "the OAuth configuration of MCP server %s is missing from its credential", reg.Name)
	}
	st := c.oauthFor(reg, sec, ver)
	req, resp, err := c.challenge(ctx, reg, sec.Headers)
	if err != nil {
		if e := c.classify(ctx, reg, err, nil); e != nil {
			return nil, e
		}
		var de *duet.Error
		if errors.As(err, &de) && de.Code == duet.CodeURLRefused {
			return nil, duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: %s", reg.Name, de.Message)
		}
		return nil, duet.WrapError(duet.CodeMCPUnreachable, err, "cannot reach MCP server %s at %s: %s", reg.Name, reg.URL, netReason(err))
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("Www-Authenticate"))
	scopes := challengeScopes(challenges)
	if err := checkChallenge(scopes); err != nil {
		return nil, c.oauthFailure(ctx, reg, err)
	}
	st.authMu.Lock()
	err = st.authorize(ctx, req, resp, challenges, scopes)
	if err == nil {
		st.failed = nil
	}
	st.authMu.Unlock()
	if err != nil {
		if e := c.oauthFailure(ctx, reg, err); e != nil {
			return nil, e
		}
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return statusOf(st.sec), nil
}

// DiscoverIssuer returns the issuer of the authorization server the MCP
// server at rawURL names now (its challenge and protected resource
// metadata, then the authorization server's metadata), sending it no
// credential. What a server names is its claim, not proof: a client secret
// is bound to the issuer of the authorization server that issued it, so
// show the result to the person who holds the secret before binding it
// (see [OAuth.Issuer]). Returns INVALID_ARGUMENT, URL_REFUSED,
// MCP_UNREACHABLE, MCP_AUTH_FAILED (no usable metadata).
func (c *Client) DiscoverIssuer(ctx context.Context, rawURL string) (string, error) {
	normalized, err := serverkey.Normalize(rawURL)
	if err != nil {
		return "", err
	}
	if err := checkDestination(ctx, c.opts.Policy, normalized); err != nil {
		return "", err
	}
	reg := &duet.MCPServer{Name: normalized, URL: normalized}
	req, resp, err := c.challenge(ctx, reg, nil)
	if err != nil {
		var de *duet.Error
		if errors.As(err, &de) && de.Code == duet.CodeURLRefused {
			return "", err
		}
		return "", duet.WrapError(duet.CodeMCPUnreachable, err, "cannot reach MCP server %s: %s", normalized, netReason(err))
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("Www-Authenticate"))
	rctx, refused := withRefusals(ctx)
	_, asm, err := discoverAuthServer(rctx, c.oauthHTTP, challenges, req.URL.String())
	if de := refused.first(); err != nil && de != nil {
		return "", duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: its authorization server: %s", normalized, de.Message)
	}
	if err != nil {
		return "", duet.WrapError(duet.CodeMCPAuthFailed, err, "MCP server %s names no usable authorization server: %s", normalized, sanitize(err.Error(), 300))
	}
	return strings.TrimSuffix(asm.Issuer, "/"), nil
}

// challenge asks the server, without a token, what it wants: its 401 or 403
// answer to an initialize request (with the WWW-Authenticate challenge that
// points to its metadata and names scopes). A server that lets the request
// through gets a bare 401 in its place: discovery then uses the well-known
// metadata locations.
func (c *Client) challenge(ctx context.Context, reg *duet.MCPServer, headers map[string]string) (*http.Request, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, reg.URL, strings.NewReader(probeBody))
	if err != nil {
		return nil, nil, duet.Errorf(duet.CodeInvalidArgument, "invalid URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := c.httpClient(reg, headers).Do(req)
	if err != nil {
		return nil, nil, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp = &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
	}
	resp.Body = http.NoBody
	return req, resp, nil
}

// oauthFailure maps a failed OAuth step (in err's chain) to a code, or
// returns nil when err holds none.
func (c *Client) oauthFailure(ctx context.Context, reg *duet.MCPServer, err error) error {
	var lr *loginRequired
	var fe *flowError
	var im *issuerMismatch
	var ub *unboundSecret
	switch {
	case errors.As(err, &lr):
		return authError(reg, http.StatusUnauthorized, "", err)
	case errors.As(err, &ub):
		return duet.WrapError(duet.CodeMCPAuthFailed, err,
			"the OAuth client secret (or key) of MCP server %s is bound to no authorization server (it was stored before Duet required one): Duet sent it nothing. "+
				"Register it again with the issuer of the authorization server the client belongs to: "+
				"`duet server add --as %s --name %s --url %s --auth %s ... --issuer URL --replace`",
			reg.Name, reg.Owner, reg.Name, reg.URL, reg.Auth)
	case errors.As(err, &im):
		return duet.WrapError(duet.CodeMCPAuthIssuerMismatch, err,
			"MCP server %s names %s, but its OAuth client is bound to %s: Duet sent it nothing. "+
				"If the server really moved to another authorization server, register it again with the new issuer: "+
				"`duet server add --as %s --name %s --url %s --auth %s ... --issuer URL --replace`",
			reg.Name, im.named(), strconvQuote(im.bound), reg.Owner, reg.Name, reg.URL, reg.Auth)
	case !errors.As(err, &fe):
		return nil
	case ctx.Err() != nil:
		if errors.Is(context.Cause(ctx), context.Canceled) {
			return duet.WrapError(duet.CodeCancelled, err, "the authorization for MCP server %s was cancelled", reg.Name)
		}
		return duet.WrapError(duet.CodeMCPCallTimeout, err, "the authorization for MCP server %s did not complete in time", reg.Name)
	case fe.refused != nil:
		return duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: its authorization server: %s", reg.Name, fe.refused.Message)
	}
	var de *duet.Error
	if errors.As(fe.err, &de) && de.Code == duet.CodeURLRefused {
		return duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: its authorization server: %s", reg.Name, de.Message)
	}
	who := reg.Owner
	if reg.Auth == duet.AuthClientCredentials {
		who = "its client"
	}
	return duet.WrapError(duet.CodeMCPAuthFailed, err, "OAuth with MCP server %s (as %s) failed: %s", reg.Name, who, fe.msg)
}

// AutoApprover returns an Authorizer for authorization servers that approve
// at once without asking anyone (test and conformance servers): it requests
// the authorization URL itself, through the SSRF guard, and takes the code
// from the redirect it answers with.
func (c *Client) AutoApprover() *Authorizer {
	return &Authorizer{RedirectURL: "http://127.0.0.1/callback", Fetch: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.oauthHTTP.Do(req)
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		loc, err := resp.Location()
		if resp.StatusCode/100 != 3 || err != nil {
			return nil, fmt.Errorf("the authorization endpoint answered %d without a redirect: it wants a person at a browser", resp.StatusCode)
		}
		return authorizationResult(loc.Query())
	}}
}

func authorizationResult(q url.Values) (*auth.AuthorizationResult, error) {
	if e := q.Get("error"); e != "" {
		msg := "the authorization server refused: " + sanitize(e, 60)
		if d := q.Get("error_description"); d != "" {
			msg += ": " + sanitize(d, 200)
		}
		return nil, errors.New(msg)
	}
	if q.Get("code") == "" {
		return nil, errors.New("the authorization server redirected back without a code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// LoopbackListener receives the authorization server's redirect on
// 127.0.0.1, the way a command-line client does (RFC 8252 section 7.3).
type LoopbackListener struct {
	a    *Authorizer
	ln   net.Listener
	srv  *http.Server
	show func(authURL string)
	mu   sync.Mutex
	want string // the state awaited
	got  chan url.Values
}

// ListenLoopback listens on 127.0.0.1:port (0: a free port) for the
// redirect to http://127.0.0.1:PORT/callback. show is called with each
// authorization URL, for the person to open. Close it when done.
func ListenLoopback(port int, show func(authURL string)) (*LoopbackListener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, duet.WrapError(duet.CodeUnavailable, err, "cannot listen on 127.0.0.1:%d for the authorization redirect", port)
	}
	l := &LoopbackListener{ln: ln, show: show, got: make(chan url.Values, 1)}
	l.a = &Authorizer{RedirectURL: fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port), Fetch: l.fetch}
	l.srv = &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
	go l.srv.Serve(ln)
	return l, nil
}

// Authorizer returns the Authorizer that waits for the redirect.
func (l *LoopbackListener) Authorizer() *Authorizer { return l.a }

// Close stops listening.
func (l *LoopbackListener) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return l.srv.Shutdown(ctx)
}

func (l *LoopbackListener) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.want = u.Query().Get("state")
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.want = ""
		l.mu.Unlock()
	}()
	l.show(args.URL)
	select {
	case q := <-l.got:
		return authorizationResult(q)
	case <-ctx.Done():
		return nil, fmt.Errorf("no authorization arrived: %w", ctx.Err())
	}
}

func (l *LoopbackListener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	l.mu.Lock()
	want := l.want
	ok := want != "" && q.Get("state") == want
	if ok {
		l.want = "" // one answer per authorization
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, page("Duet is not waiting for this authorization (unknown or used state). Start again with duet server login."))
		return
	}
	l.got <- q
	if e := q.Get("error"); e != "" {
		io.WriteString(w, page("The authorization server refused: "+e+". You can close this tab."))
		return
	}
	io.WriteString(w, page("Duet is authorized. You can close this tab and return to the terminal."))
}

func page(msg string) string {
	return "<!doctype html><html><head><title>Duet</title></head><body><p>" + html.EscapeString(msg) + "</p></body></html>\n"
}
