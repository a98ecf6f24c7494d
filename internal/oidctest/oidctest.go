// Package oidctest runs a real OpenID Connect provider in-process for
// tests: zitadel/oidc's example OP (github.com/zitadel/oidc/v3, a
// maintained, certified Go implementation) with its in-memory storage,
// its login form and its users. Duet's tests sign in through it; nothing
// here mints a token — every token is issued and signed by the OP.
//
// The only configuration on top of the example is what an identity
// provider's administrator sets: the test clients, that their access tokens
// are JWTs carrying their scopes and extra audiences (Duet's resource), and
// signing keys that can be rotated.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The example OP's users (storage.NewUserStore).
const (
	Password = "verysecure"
	// SubjectID is the sub of the first user.
	SubjectID = "id1"
)

// Client is a client registered at the provider.
type Client struct {
	ID, Secret   string
	RedirectURIs []string
	// Audience is added to the audience of its access tokens (as an
	// administrator maps a client to an API).
	Audience []string
}

// Provider is a running OP.
type Provider struct {
	URL string // the issuer
	srv *httptest.Server
	st  *store
}

// Start runs a provider on 127.0.0.1 until the test ends.
func Start(t testing.TB, clients ...Client) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return StartOn(t, ln, clients...)
}

// StartOn runs a provider on ln (a restarted provider keeps its issuer
// URL by listening on the same address).
func StartOn(t testing.TB, ln net.Listener, clients ...Client) *Provider {
	t.Helper()
	issuer := "http://" + ln.Addr().String()
	cm := map[string]*storage.Client{}
	extra := map[string]Client{}
	for _, c := range clients {
		cm[c.ID] = storage.WebClient(c.ID, c.Secret, c.RedirectURIs...)
		extra[c.ID] = c
	}
	st := &store{Storage: storage.NewStorageWithClients(storage.NewUserStore(issuer), cm), clients: extra}
	st.rotate()
	h := exampleop.SetupServer(issuer, st, nil, false)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return &Provider{URL: issuer, srv: srv, st: st}
}

// Username is the login name of the first user.
func (p *Provider) Username() string {
	u, _ := url.Parse(p.URL)
	return "test-user@" + u.Hostname()
}

// Rotate replaces the provider's signing key: tokens signed with the old
// key no longer verify against its key set.
func (p *Provider) Rotate() { p.st.rotate() }

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

// store is the example storage with what an administrator configures.
type store struct {
	*storage.Storage
	clients map[string]Client

	mu  sync.Mutex
	key *signingKey
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

type publicKey struct{ *signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.signingKey.key.PublicKey }

func (s *store) rotate() {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 1
	if s.key != nil {
		fmt.Sscanf(s.key.id, "key-%d", &n)
		n++
	}
	s.key = &signingKey{id: fmt.Sprintf("key-%d", n), key: k}
}

func (s *store) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key, nil
}

func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *store) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []op.Key{publicKey{s.key}}, nil
}

// jwtClient: access tokens are JWTs (RFC 9068 style) and any scope may be
// asked for.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (jwtClient) IsScopeAllowed(string) bool          { return true }
func (jwtClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := s.clients[id]; ok {
		return jwtClient{c}, nil
	}
	return c, nil
}

// audRequest adds a client's configured audience to its tokens.
type audRequest struct {
	op.AuthRequest
	extra []string
}

func (a audRequest) GetAudience() []string { return append(a.AuthRequest.GetAudience(), a.extra...) }

func (s *store) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	if c, ok := s.clients[r.GetClientID()]; ok && len(c.Audience) > 0 {
		return audRequest{r, c.Audience}, nil
	}
	return r, nil
}

// GetPrivateClaimsFromScopes puts the granted scopes in the access token
// ("scope", RFC 9068).
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		claims = map[string]any{}
	}
	var keep []string
	for _, sc := range scopes {
		if sc != "openid" && sc != "profile" && sc != "email" && sc != "offline_access" {
			keep = append(keep, sc)
		}
	}
	claims["scope"] = strings.Join(keep, " ")
	return claims, nil
}

// ---- a person in a browser ----

// Browser is a person's browser: it follows redirects and keeps cookies,
// fills the provider's login form with the user's name and password, and
// answers Duet's consent screen.
type Browser struct {
	Client   *http.Client
	Username string
	// Consent is the button pressed on Duet's consent screen: "allow" or
	// "deny".
	Consent string
}

// NewBrowser returns a browser that signs in as username.
func NewBrowser(username string) *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{Username: username, Consent: "allow", Client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var (
	inputRE  = regexp.MustCompile(`<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"`)
	actionRE = regexp.MustCompile(`<form[^>]*action="([^"]*)"`)
)

// Visit opens start and goes on — following redirects, signing in,
// consenting — until a redirect leads to an address beginning with
// stopAt (the client's redirect URI), which it returns without visiting.
func (b *Browser) Visit(ctx context.Context, start, stopAt string) (*url.URL, error) {
	next, method, form := start, http.MethodGet, url.Values(nil)
	for range 20 {
		if strings.HasPrefix(next, stopAt) {
			return url.Parse(next)
		}
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(ctx, method, next, body)
		if err != nil {
			return nil, err
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", req.URL.Scheme+"://"+req.URL.Host) // as a browser posts a form
		}
		resp, err := b.Client.Do(req)
		if err != nil {
			return nil, err
		}
		page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			u, err := resp.Request.URL.Parse(loc)
			if err != nil {
				return nil, err
			}
			next, method, form = u.String(), http.MethodGet, nil
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s %s: HTTP %d: %.300s", method, next, resp.StatusCode, page)
		}
		fields := url.Values{}
		for _, m := range inputRE.FindAllStringSubmatch(string(page), -1) {
			fields.Set(m[1], m[2])
		}
		action := ""
		if m := actionRE.FindStringSubmatch(string(page)); m != nil {
			action = m[1]
		}
		switch {
		case strings.Contains(string(page), `name="password"`): // the provider's login form
			fields.Set("username", b.Username)
			fields.Set("password", Password)
		case fields.Get("consent") != "": // Duet's consent screen
			fields.Set("action", b.Consent)
		default:
			return nil, fmt.Errorf("%s: a page with no form to fill: %.300s", next, page)
		}
		u, err := resp.Request.URL.Parse(action)
		if err != nil {
			return nil, err
		}
		next, method, form = u.String(), http.MethodPost, fields
	}
	return nil, fmt.Errorf("too many steps from %s", start)
}
