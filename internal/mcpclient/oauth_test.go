package mcpclient_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/vault"
)

// oauthServer starts an authorization server and a go-sdk MCP server it
// protects.
func oauthServer(t *testing.T, opts mcptest.AuthOptions, p mcptest.Protection) (*mcptest.AuthServer, string, *mcptest.Counters) {
	t.Helper()
	as := mcptest.NewAuthServer(t, opts)
	n := &mcptest.Counters{}
	return as, mcptest.Protected(t, mcptest.NewServer("protected", n), as, p), n
}

func (e *env) registerOAuth(t *testing.T, owner, name, url string, o *mcpclient.OAuth) *duet.MCPServer {
	t.Helper()
	s, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: owner, Name: name, URL: url, OAuth: o})
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	return s
}

func wantCode(t *testing.T, err error, code duet.Code, substrings ...string) {
	t.Helper()
	if duet.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, s := range substrings {
		if !strings.Contains(duet.ErrorMessage(err), s) {
			t.Errorf("message %q lacks %q", duet.ErrorMessage(err), s)
		}
	}
}

// TestOAuthLogin is the authorization code flow as a person meets it: before
// login every call fails asking for `duet server login`; login (dynamic
// client registration, PKCE, the resource parameter) stores the tokens
// sealed; calls then carry them, from this client and from a new one on the
// same database.
func TestOAuthLogin(t *testing.T) {
	t.Parallel()
	as, url, n := oauthServer(t, mcptest.AuthOptions{Prefix: "secret-login", Scopes: []string{"mcp:read"}}, mcptest.Protection{Scopes: []string{"mcp:read"}})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "orders", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	if reg.Auth != duet.AuthOAuth || reg.CredentialRef == "" || reg.HeaderNames != nil {
		t.Fatalf("registration: %+v", reg)
	}
	_, err := e.c.Sync(t.Context(), "alice", "orders")
	wantCode(t, err, duet.CodeMCPAuthFailed, "duet server login --as alice orders", "mcp:read")
	_, err = e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 2})
	wantCode(t, err, duet.CodeMCPAuthFailed, "duet server login --as alice orders")
	if as.Authorizations.Load() != 0 || as.Registrations.Load() != 0 {
		t.Fatalf("an unattended call started an authorization: %d authorizations, %d registrations", as.Authorizations.Load(), as.Registrations.Load())
	}
	if _, err := e.c.Login(t.Context(), "alice", "orders"); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("Login without an authorizer: got %v, want INVALID_ARGUMENT", err)
	}

	st, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "orders")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Authorized || !slices.Contains(st.Scopes, "mcp:read") || !st.Renewable || st.Expires == nil || !strings.HasPrefix(st.ClientID, "dcr-") {
		t.Fatalf("status after login: %+v", st)
	}
	q := as.LastAuthorization()
	if q.Get("resource") != url || q.Get("code_challenge_method") != "S256" || !strings.Contains(q.Get("scope"), "mcp:read") || !strings.Contains(q.Get("scope"), "offline_access") {
		t.Errorf("authorization request: %v", q)
	}
	if _, err := e.c.Sync(t.Context(), "alice", "orders"); err != nil {
		t.Fatal(err)
	}
	res, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 2})
	if err != nil || res.Text() != "1+2=3" {
		t.Fatalf("call after login: %v %v", res, err)
	}
	// bob registered the same server but has not logged in: alice's token
	// is never his.
	e.registerOAuth(t, "bob", "orders", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	_, err = e.invoke(t, "bob", reg.ServerKey, "add", map[string]any{"a": 1, "b": 2})
	wantCode(t, err, duet.CodeMCPAuthFailed, "duet server login --as bob orders")

	// Sealed: no token or client secret in the stored ciphertext.
	cred, err := e.db.FindCredential(t.Context(), reg.CredentialRef)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range as.Issued() {
		if bytes.Contains(cred.Ciphertext, []byte(s)) {
			t.Errorf("an issued secret is stored in plain text")
		}
	}
	// Another process (a new client on the same store) uses the stored
	// token without authorizing again.
	other := mcpclient.New(mcpclient.Options{Store: e.db, Keyring: func() (*vault.Keyring, error) { return e.keys.Load(), nil },
		Policy: netguard.Policy{AllowLoopback: true}, CallTimeout: 10 * time.Second, Now: e.clock.Now})
	defer other.Close()
	if _, err := other.Invoke(t.Context(), duet.InvokeRequest{Executor: "alice", ServerKey: reg.ServerKey, Tool: "add",
		Arguments: map[string]any{"a": 2, "b": 2}, Source: duet.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	if as.Authorizations.Load() != 1 || as.Registrations.Load() != 1 || n.Calls.Load() != 2 {
		t.Errorf("got %d authorizations, %d registrations, %d calls; want 1, 1, 2", as.Authorizations.Load(), as.Registrations.Load(), n.Calls.Load())
	}
}

// TestOAuthRenewal: an access token about to expire is refreshed before use;
// one the server revoked early is refreshed on its 401; when the refresh
// token is refused too, the call asks for login.
func TestOAuthRenewal(t *testing.T) {
	t.Parallel()
	as, url, _ := oauthServer(t, mcptest.AuthOptions{TokenTTL: time.Hour}, mcptest.Protection{})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	if _, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Sync(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour - 20*time.Second) // within the last 30 s of its lifetime
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	if got := as.Refreshes.Load(); got != 1 {
		t.Errorf("refreshes before expiry: got %d, want 1", got)
	}
	as.RevokeAccess()
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatalf("after the access token was revoked: %v", err)
	}
	if got := as.Refreshes.Load(); got != 2 {
		t.Errorf("refreshes after a revoked access token: got %d, want 2", got)
	}
	as.RevokeAll()
	_, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1})
	wantCode(t, err, duet.CodeMCPAuthFailed, "duet server login --as alice s")
	if as.Authorizations.Load() != 1 {
		t.Errorf("authorizations: got %d, want 1 (the login)", as.Authorizations.Load())
	}
}

// TestOAuthStepUp: a tool needing more scopes answers 403 insufficient_scope.
// Unattended, the call fails naming the scopes, and the next login requests
// them; with an Authorizer the call re-authorizes once and goes through.
// A server that keeps refusing a scope the token was granted is not asked
// again and again.
func TestOAuthStepUp(t *testing.T) {
	t.Parallel()
	as, url, _ := oauthServer(t, mcptest.AuthOptions{Scopes: []string{"mcp:read", "mcp:write"}},
		mcptest.Protection{Scopes: []string{"mcp:read"}, CallScopes: []string{"mcp:write"}})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	auto := e.c.Authorizing(e.c.AutoApprover())
	if _, err := auto.Login(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	if got := as.LastAuthorization().Get("scope"); strings.Contains(got, "mcp:write") {
		t.Fatalf("the first authorization asked for %q; want only what the server asked for", got)
	}
	_, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1})
	wantCode(t, err, duet.CodeMCPAuthFailed, "duet server login --as alice s", "mcp:write")
	st, err := e.c.AuthStatus(t.Context(), "alice", "s")
	if err != nil || !slices.Contains(st.Wanted, "mcp:write") {
		t.Fatalf("status: %+v %v", st, err)
	}
	if _, err := auto.Login(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(as.LastAuthorization().Get("scope")); !slices.Contains(got, "mcp:write") || !slices.Contains(got, "mcp:read") {
		t.Fatalf("the second login asked for %v; want mcp:read and mcp:write", got)
	}
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}

	// In-call step-up, with an Authorizer.
	e.registerOAuth(t, "bob", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	before := as.Authorizations.Load()
	if _, err := auto.Invoke(t.Context(), duet.InvokeRequest{Executor: "bob", ServerKey: reg.ServerKey, Tool: "add",
		Arguments: map[string]any{"a": 1, "b": 1}, Source: duet.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	if got := as.Authorizations.Load() - before; got != 2 {
		t.Errorf("authorizations for bob's first call: got %d, want 2 (sync, then the step-up)", got)
	}
}

// TestOAuthStepUpLimit: a server that keeps answering insufficient_scope is
// not authorized against forever, even with an Authorizer at hand.
func TestOAuthStepUpLimit(t *testing.T) {
	t.Parallel()
	as, url, _ := oauthServer(t, mcptest.AuthOptions{Withhold: []string{"mcp:admin"}}, mcptest.Protection{CallScopes: []string{"mcp:admin"}})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	auto := e.c.Authorizing(e.c.AutoApprover())
	if _, err := auto.Sync(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	var err error
	for range 5 {
		_, err = auto.Invoke(t.Context(), duet.InvokeRequest{Executor: "alice", ServerKey: reg.ServerKey, Tool: "add",
			Arguments: map[string]any{"a": 1, "b": 1}, Source: duet.SourceCLI})
		if err == nil {
			t.Fatal("a call succeeded without the scope")
		}
	}
	wantCode(t, err, duet.CodeMCPAuthFailed, "gave up after 3 authorizations")
	if got := as.Authorizations.Load(); got != 3 {
		t.Errorf("authorizations: got %d, want 3 (the sync's and two step-ups, the limit within a minute)", got)
	}
}

// TestOAuthPreregistered: a client registered beforehand is used (no dynamic
// registration), with client_secret_basic when that is all the token
// endpoint accepts.
func TestOAuthPreregistered(t *testing.T) {
	t.Parallel()
	as, url, _ := oauthServer(t, mcptest.AuthOptions{Clients: map[string]string{"duet-app": "secret-pre-1"}, NoRegistration: true,
		AuthMethods: []string{"client_secret_basic"}}, mcptest.Protection{})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth, ClientID: "duet-app", ClientSecret: "secret-pre-1", Issuer: as.URL})
	if _, err := e.c.Authorizing(e.c.AutoApprover()).Sync(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	if got := as.AuthMethodsUsed(); !slices.Equal(got, []string{"client_secret_basic"}) || as.LastAuthorization().Get("client_id") != "duet-app" {
		t.Errorf("client authentication: %v, client %q", got, as.LastAuthorization().Get("client_id"))
	}
}

// TestOAuthClientCredentials: a machine identity needs no login; secret
// (post or basic) or private_key_jwt; the resource parameter is sent; an
// expired token is replaced by the grant again.
func TestOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	tests := []struct {
		name    string
		methods []string
		oauth   *mcpclient.OAuth
		want    string
	}{
		{"secret post", nil, &mcpclient.OAuth{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "secret-cc-1"}, "client_secret_post"},
		{"secret basic", []string{"client_secret_basic"}, &mcpclient.OAuth{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "secret-cc-1"}, "client_secret_basic"},
		{"private key jwt", []string{"private_key_jwt"}, &mcpclient.OAuth{Grant: duet.AuthClientCredentials, ClientID: "svc-key", PrivateKey: keyPEM}, "private_key_jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			as, url, _ := oauthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "secret-cc-1"}, KeyClients: map[string]*ecdsa.PublicKey{"svc-key": &key.PublicKey},
				AuthMethods: tt.methods, TokenTTL: 4 * time.Second, Scopes: []string{"mcp:tools"}}, mcptest.Protection{Scopes: []string{"mcp:tools"}})
			e := newEnv(t)
			o := *tt.oauth
			o.Issuer = as.URL
			reg := e.registerOAuth(t, "ci", "s", url, &o)
			if _, err := e.c.Sync(t.Context(), "ci", "s"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.invoke(t, "ci", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
				t.Fatal(err)
			}
			if got := as.AuthMethodsUsed(); len(got) == 0 || got[0] != tt.want {
				t.Errorf("client authentication: got %v, want %s", got, tt.want)
			}
			if f := as.LastTokenRequest(); f.Get("resource") != url || f.Get("scope") != "mcp:tools" {
				t.Errorf("token request: resource %q, scope %q", f.Get("resource"), f.Get("scope"))
			}
			// Within the last quarter of its lifetime. (A short one: the
			// authorization server takes an assertion dated at most 5 s
			// ahead of its own clock.)
			e.clock.Advance(3500 * time.Millisecond)
			if _, err := e.invoke(t, "ci", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
				t.Fatal(err)
			}
			if got := as.ClientGrants.Load(); got != 2 {
				t.Errorf("client credentials grants: got %d, want 2 (the first and the renewal)", got)
			}
			if as.Authorizations.Load() != 0 {
				t.Errorf("a machine identity went to the authorization endpoint")
			}
		})
	}
}

// TestOAuthFailures: what a person reads when OAuth goes wrong.
func TestOAuthFailures(t *testing.T) {
	t.Parallel()
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		as, url, _ := oauthServer(t, mcptest.AuthOptions{Deny: true}, mcptest.Protection{})
		e := newEnv(t)
		e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
		auto := e.c.Authorizing(e.c.AutoApprover())
		_, err := auto.Login(t.Context(), "alice", "s")
		wantCode(t, err, duet.CodeMCPAuthFailed, "access_denied")
		// A sync (whose handshake the go-sdk tries twice) asks once.
		_, err = auto.Sync(t.Context(), "alice", "s")
		wantCode(t, err, duet.CodeMCPAuthFailed, "access_denied")
		if got := as.Authorizations.Load(); got != 2 {
			t.Errorf("authorizations: got %d, want 2 (the login's and the sync's)", got)
		}
	})
	t.Run("wrong client secret", func(t *testing.T) {
		t.Parallel()
		as, url, _ := oauthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "right"}}, mcptest.Protection{})
		e := newEnv(t)
		e.registerOAuth(t, "ci", "s", url, &mcpclient.OAuth{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "secret-wrong-77", Issuer: as.URL})
		_, err := e.c.Sync(t.Context(), "ci", "s")
		wantCode(t, err, duet.CodeMCPAuthFailed, "invalid_client")
		if strings.Contains(err.Error(), "secret-wrong-77") {
			t.Errorf("the error quotes the client secret: %v", err)
		}
	})
	t.Run("static headers", func(t *testing.T) {
		t.Parallel()
		_, url, _ := oauthServer(t, mcptest.AuthOptions{}, mcptest.Protection{})
		e := newEnv(t)
		if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "s", URL: url}); err != nil {
			t.Fatal(err)
		}
		_, err := e.c.Sync(t.Context(), "alice", "s")
		wantCode(t, err, duet.CodeMCPAuthFailed, "--auth oauth")
		_, err = e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s")
		wantCode(t, err, duet.CodeInvalidArgument, "--auth oauth")
	})
	t.Run("registration", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		for _, o := range []*mcpclient.OAuth{
			{Grant: "password"},
			{Grant: duet.AuthClientCredentials},
			{Grant: duet.AuthClientCredentials, ClientID: "x"},
			{Grant: duet.AuthClientCredentials, ClientID: "x", PrivateKey: "not a key"},
			{Grant: duet.AuthOAuth, ClientSecret: "s"},
			{Grant: duet.AuthOAuth, ClientMetadataURL: "http://duet.example/client.json"},
			{Grant: duet.AuthOAuth, Scopes: []string{"a b"}},
		} {
			_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "s", URL: "http://127.0.0.1:1/mcp", OAuth: o})
			if duet.ErrorCode(err) != duet.CodeInvalidArgument {
				t.Errorf("%+v: got %v, want INVALID_ARGUMENT", o, err)
			}
		}
		_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "s", URL: "http://127.0.0.1:1/mcp",
			Headers: map[string]string{"Authorization": "Bearer x"}, OAuth: &mcpclient.OAuth{Grant: duet.AuthOAuth}})
		wantCode(t, err, duet.CodeInvalidArgument, "Authorization")
	})
}

// TestLoopbackLogin is the person's path: the authorization URL is shown,
// the browser (here a plain HTTP client following redirects) ends at the
// loopback listener, which hands the code back.
func TestLoopbackLogin(t *testing.T) {
	t.Parallel()
	_, url, _ := oauthServer(t, mcptest.AuthOptions{}, mcptest.Protection{})
	e := newEnv(t)
	e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	browsed := make(chan error, 1)
	ln, err := mcpclient.ListenLoopback(0, func(authURL string) {
		go func() {
			resp, err := http.Get(authURL)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = errStatus(resp.StatusCode)
				}
			}
			browsed <- err
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !strings.HasPrefix(ln.Authorizer().RedirectURL, "http://127.0.0.1:") {
		t.Fatalf("redirect URL %q", ln.Authorizer().RedirectURL)
	}
	// A callback nobody waits for is refused.
	resp, err := http.Get(ln.Authorizer().RedirectURL + "?code=x&state=forged")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("forged callback: got %d, want 400", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st, err := e.c.Authorizing(ln.Authorizer()).Login(ctx, "alice", "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := <-browsed; err != nil {
		t.Fatalf("the browser: %v", err)
	}
	if !st.Authorized {
		t.Fatalf("status: %+v", st)
	}
	// Nobody at the browser: the wait ends with the context.
	ln2, err := mcpclient.ListenLoopback(0, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer ln2.Close()
	short, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	_, err = e.c.Authorizing(ln2.Authorizer()).Login(short, "alice", "s")
	wantCode(t, err, duet.CodeMCPCallTimeout)
}

type errStatus int

func (e errStatus) Error() string { return http.StatusText(int(e)) }

// TestOAuthTokensAfterRotation: a long-running process that renews a token
// after another process rotated the master key seals it under the new key
// (pruning the old key later loses nothing).
func TestOAuthTokensAfterRotation(t *testing.T) {
	t.Parallel()
	as, url, _ := oauthServer(t, mcptest.AuthOptions{TokenTTL: time.Hour}, mcptest.Protection{})
	e := newEnv(t)
	oldKey, _ := vault.GenerateKey()
	kr1, _ := vault.NewKeyring(oldKey)
	e.keys.Store(kr1)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	if _, err := e.c.Authorizing(e.c.AutoApprover()).Sync(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	// The session this process keeps open predates the rotation.
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	newKey, _ := vault.GenerateKey()
	kr2, _ := vault.NewKeyring(newKey, oldKey)
	rotator := mcpclient.New(mcpclient.Options{Store: e.db, Keyring: func() (*vault.Keyring, error) { return kr2, nil }})
	defer rotator.Close()
	if res, err := rotator.Rewrap(t.Context()); err != nil || res.Rewrapped != 1 {
		t.Fatalf("rewrap: %+v %v", res, err)
	}
	e.keys.Store(kr2)
	e.clock.Advance(time.Hour) // the next call renews the token first
	if _, err := e.invoke(t, "alice", reg.ServerKey, "add", map[string]any{"a": 1, "b": 1}); err != nil {
		t.Fatal(err)
	}
	if as.Refreshes.Load() != 1 {
		t.Fatalf("refreshes: got %d, want 1", as.Refreshes.Load())
	}
	cred, err := e.db.FindCredential(t.Context(), reg.CredentialRef)
	if err != nil {
		t.Fatal(err)
	}
	if kr2.NeedsRewrap(cred.Ciphertext) {
		t.Errorf("the renewed token was sealed under the old key")
	}
}

// otherProcess is another Duet process on the same database and master key
// (`duet serve` beside `duet server login`, two instances of a service).
func (e *env) otherProcess(t *testing.T) *mcpclient.Client {
	t.Helper()
	c := mcpclient.New(mcpclient.Options{Store: e.db, Keyring: func() (*vault.Keyring, error) { return e.keys.Load(), nil },
		Policy: netguard.Policy{AllowLoopback: true}, CallTimeout: 10 * time.Second, Now: e.clock.Now})
	t.Cleanup(func() { c.Close() })
	return c
}

func invokeAdd(ctx context.Context, c *mcpclient.Client, owner, serverKey string) error {
	_, err := c.Invoke(ctx, duet.InvokeRequest{Executor: owner, ServerKey: serverKey, Tool: "add",
		Arguments: map[string]any{"a": 1, "b": 1}, Source: duet.SourceCLI})
	return err
}

// TestOAuthIssuerBinding: a pre-registered client is bound to the
// authorization server given at registration (required with a secret or
// key) or, for a public client, to the one it was first used with. When the
// MCP server later names another one, Duet refuses with
// MCP_AUTH_ISSUER_MISMATCH and sends that server nothing: no client secret,
// no assertion, not even the client id.
func TestOAuthIssuerBinding(t *testing.T) {
	t.Parallel()
	t.Run("client credentials", func(t *testing.T) {
		t.Parallel()
		real := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "secret-bound-1"}})
		evil := mcptest.NewAuthServer(t, mcptest.AuthOptions{})
		var moved atomic.Pointer[mcptest.AuthServer]
		url := mcptest.Protected(t, mcptest.NewServer("s", nil), real, mcptest.Protection{Moved: &moved})
		e := newEnv(t)
		reg := e.registerOAuth(t, "ci", "s", url, &mcpclient.OAuth{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "secret-bound-1", Issuer: real.URL})
		if _, err := e.c.Sync(t.Context(), "ci", "s"); err != nil {
			t.Fatal(err)
		}
		if st, err := e.c.AuthStatus(t.Context(), "ci", "s"); err != nil || st.Issuer != real.URL {
			t.Fatalf("status after the first grant: %+v %v; want the issuer %s", st, err, real.URL)
		}
		moved.Store(evil) // the server now points at another authorization server
		err := invokeAdd(t.Context(), e.c, "ci", reg.ServerKey)
		wantCode(t, err, duet.CodeMCPAuthIssuerMismatch, evil.URL, real.URL, "--issuer")
		if evil.LastTokenRequest() != nil || evil.ClientGrants.Load() != 0 {
			t.Errorf("the other authorization server received a token request: %v", evil.LastTokenRequest())
		}
	})
	t.Run("public client pinned at first use", func(t *testing.T) {
		t.Parallel()
		real := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"duet-app": ""}, NoRegistration: true})
		evil := mcptest.NewAuthServer(t, mcptest.AuthOptions{})
		var moved atomic.Pointer[mcptest.AuthServer]
		url := mcptest.Protected(t, mcptest.NewServer("s", nil), real, mcptest.Protection{Moved: &moved})
		e := newEnv(t)
		e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth, ClientID: "duet-app"})
		auto := e.c.Authorizing(e.c.AutoApprover())
		if st, err := auto.Login(t.Context(), "alice", "s"); err != nil || st.Issuer != real.URL {
			t.Fatalf("login: %+v %v; want the issuer %s pinned", st, err, real.URL)
		}
		moved.Store(evil)
		_, err := auto.Login(t.Context(), "alice", "s")
		wantCode(t, err, duet.CodeMCPAuthIssuerMismatch, evil.URL, real.URL)
		if evil.Authorizations.Load() != 0 || evil.LastTokenRequest() != nil {
			t.Errorf("the other authorization server was asked: %d authorizations, token request %v", evil.Authorizations.Load(), evil.LastTokenRequest())
		}
	})
	t.Run("issuer given at registration", func(t *testing.T) {
		t.Parallel()
		real := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"duet-app": "secret-bound-3"}})
		named := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"duet-app": "secret-bound-3"}})
		url := mcptest.Protected(t, mcptest.NewServer("s", nil), named, mcptest.Protection{})
		e := newEnv(t)
		e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth, ClientID: "duet-app", ClientSecret: "secret-bound-3", Issuer: real.URL + "/"})
		_, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s")
		wantCode(t, err, duet.CodeMCPAuthIssuerMismatch, named.URL)
		if named.Authorizations.Load() != 0 || named.LastTokenRequest() != nil {
			t.Errorf("the server's authorization server was asked")
		}
		for _, bad := range []string{"http://auth.example.com", "https://auth.example.com/?tenant=1", "ftp://auth.example.com"} {
			_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "x", URL: url,
				OAuth: &mcpclient.OAuth{Grant: duet.AuthOAuth, ClientID: "duet-app", Issuer: bad}})
			wantCode(t, err, duet.CodeInvalidArgument, "issuer")
		}
	})
}

// TestOAuthSecretBoundAtEntry: a client secret or key is bound to the
// issuer of the authorization server it belongs to when it is entered.
// Without that issuer the registration is refused (INVALID_ARGUMENT saying
// how to find it), on every path that registers, so an MCP server hostile
// from its first contact — naming an authorization server of its own —
// receives nothing. A public client (no secret) may still be pinned at its
// first authorization.
func TestOAuthSecretBoundAtEntry(t *testing.T) {
	t.Parallel()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	evil := mcptest.NewAuthServer(t, mcptest.AuthOptions{})
	url := mcptest.Protected(t, mcptest.NewServer("s", nil), evil, mcptest.Protection{})
	e := newEnv(t)
	auto := e.c.Authorizing(e.c.AutoApprover())
	for i, o := range []*mcpclient.OAuth{
		{Grant: duet.AuthOAuth, ClientID: "duet-app", ClientSecret: "secret-entry-1"},
		{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "secret-entry-2"},
		{Grant: duet.AuthClientCredentials, ClientID: "svc-key", PrivateKey: keyPEM},
		{Grant: duet.AuthEnterprise, ClientID: "app", ClientSecret: "secret-entry-3", IdPIssuer: "https://idp.example.com", IdPClientID: "duet", IDToken: "h.p.s"},
	} {
		owner := fmt.Sprintf("u%d", i)
		_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: owner, Name: "s", URL: url, OAuth: o})
		if duet.ErrorCode(err) != duet.CodeInvalidArgument || !strings.Contains(duet.ErrorMessage(err), "--issuer") ||
			!strings.Contains(duet.ErrorMessage(err), "/.well-known/oauth-authorization-server") {
			t.Errorf("%s without an issuer: got %v, want INVALID_ARGUMENT saying how to find the issuer", o.Grant, err)
			if err == nil {
				auto.Login(t.Context(), owner, "s") // the first authorization goes where the server points
			}
		}
	}
	if evil.Authorizations.Load() != 0 || evil.LastTokenRequest() != nil {
		t.Errorf("the authorization server the MCP server named was contacted: %d authorizations, token request %v",
			evil.Authorizations.Load(), evil.LastTokenRequest())
	}
	// With the issuer it is bound to, the registration is accepted; and a
	// public client needs none.
	e.registerOAuth(t, "v0", "s", url, &mcpclient.OAuth{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "secret-entry-2", Issuer: "https://auth.example.com"})
	e.registerOAuth(t, "v1", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth, ClientID: "duet-app"})
}

// TestOAuthRenewalAcrossProcesses: two processes share alice's grant and
// its rotating refresh token. When the token expires, one of them renews it
// and the other uses the result: the refresh token is spent once (the
// authorization server revokes a grant whose refresh token is reused), and
// neither logs the other out.
func TestOAuthRenewalAcrossProcesses(t *testing.T) {
	t.Parallel()
	as, url, _ := oauthServer(t, mcptest.AuthOptions{TokenTTL: time.Hour}, mcptest.Protection{})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	if _, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	procs := []*mcpclient.Client{e.c, e.otherProcess(t), e.otherProcess(t)}
	for _, p := range procs {
		if err := invokeAdd(t.Context(), p, "alice", reg.ServerKey); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		e.clock.Advance(time.Hour - 20*time.Second) // within the last 30 s of its lifetime
		errs := make(chan error, len(procs))
		for _, p := range procs {
			go func() { errs <- invokeAdd(t.Context(), p, "alice", reg.ServerKey) }()
		}
		for range procs {
			if err := <-errs; err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
		if got := as.Refreshes.Load(); got != int64(round+1) {
			t.Errorf("round %d: %d refreshes, want %d (one per expiry, whatever the number of processes)", round, got, round+1)
		}
	}
	if as.ReusedRefresh.Load() != 0 {
		t.Errorf("a refresh token was spent twice (%d times)", as.ReusedRefresh.Load())
	}
	if st, err := e.c.AuthStatus(t.Context(), "alice", "s"); err != nil || !st.Authorized {
		t.Errorf("status: %+v %v", st, err)
	}
}

// TestOAuthStepUpLoginWhileServing: `duet server login` grants more scopes
// while `duet serve` (another process) holds the older, narrower token. The
// server's next renewal renews the new grant; it does not undo the step-up.
func TestOAuthStepUpLoginWhileServing(t *testing.T) {
	t.Parallel()
	_, url, _ := oauthServer(t, mcptest.AuthOptions{Scopes: []string{"mcp:read", "mcp:write"}, TokenTTL: time.Hour},
		mcptest.Protection{Scopes: []string{"mcp:read"}, CallScopes: []string{"mcp:write"}})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	serve := e.otherProcess(t)
	if _, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := serve.Sync(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	err := invokeAdd(t.Context(), serve, "alice", reg.ServerKey)
	wantCode(t, err, duet.CodeMCPAuthFailed, "mcp:write")
	// alice logs in again from her terminal: the grant now has mcp:write.
	st, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s")
	if err != nil || !slices.Contains(st.Scopes, "mcp:write") {
		t.Fatalf("step-up login: %+v %v", st, err)
	}
	e.clock.Advance(time.Hour) // serve's token, and the new one, are renewed before use
	if err := invokeAdd(t.Context(), serve, "alice", reg.ServerKey); err != nil {
		t.Fatalf("serve's call after the step-up: %v", err)
	}
	st, err = e.c.AuthStatus(t.Context(), "alice", "s")
	if err != nil || !slices.Contains(st.Scopes, "mcp:write") || len(st.Wanted) != 0 {
		t.Fatalf("stored grant after serve's renewal: %+v %v; want mcp:write kept", st, err)
	}
}

// TestOAuthRefusedRefreshKeepsNewerGrant: while serve's renewal waits for
// the authorization server, alice logs in again (a new grant) and her old
// grant is revoked; the refused refresh drops nothing but the refused token.
func TestOAuthRefusedRefreshKeepsNewerGrant(t *testing.T) {
	t.Parallel()
	var as *mcptest.AuthServer
	var once sync.Once
	var login func()
	as, url, _ := oauthServer(t, mcptest.AuthOptions{TokenTTL: time.Hour, OnRefresh: func() { once.Do(func() { login() }) }}, mcptest.Protection{})
	e := newEnv(t)
	reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	terminal := e.otherProcess(t)
	loginErr := make(chan error, 1)
	login = func() {
		as.RevokeAll() // the old grant ends (revoked by an administrator, say)
		_, err := terminal.Authorizing(terminal.AutoApprover()).Login(t.Context(), "alice", "s")
		loginErr <- err
	}
	if _, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
	if err := invokeAdd(t.Context(), e.c, "alice", reg.ServerKey); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	// The renewal meets the login; the call then goes through with the new grant.
	if err := invokeAdd(t.Context(), e.c, "alice", reg.ServerKey); err != nil {
		t.Errorf("the call after the refused refresh: %v", err)
	}
	if err := <-loginErr; err != nil {
		t.Fatalf("the login during the renewal: %v", err)
	}
	if st, err := e.c.AuthStatus(t.Context(), "alice", "s"); err != nil || !st.Authorized {
		t.Fatalf("status: %+v %v; want the new grant kept", st, err)
	}
	if err := invokeAdd(t.Context(), terminal, "alice", reg.ServerKey); err != nil {
		t.Errorf("a call with the new grant: %v", err)
	}
}

// TestOAuthScopeBounds: a server naming absurd scopes in its challenges is
// refused, and what Duet keeps for the next login stays bounded.
func TestOAuthScopeBounds(t *testing.T) {
	t.Parallel()
	t.Run("absurd challenge", func(t *testing.T) {
		t.Parallel()
		many := make([]string, 2000)
		for i := range many {
			many[i] = fmt.Sprintf("scope-%04d", i)
		}
		_, url, _ := oauthServer(t, mcptest.AuthOptions{}, mcptest.Protection{Scopes: many})
		e := newEnv(t)
		reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
		before, _ := e.db.FindCredential(t.Context(), reg.CredentialRef)
		for range 3 {
			_, err := e.c.Sync(t.Context(), "alice", "s")
			wantCode(t, err, duet.CodeMCPAuthFailed, "2000 scopes")
		}
		after, _ := e.db.FindCredential(t.Context(), reg.CredentialRef)
		if after.Version != before.Version || len(after.Ciphertext) != len(before.Ciphertext) {
			t.Errorf("the credential changed: %d bytes at version %d, then %d bytes at version %d",
				len(before.Ciphertext), before.Version, len(after.Ciphertext), after.Version)
		}
		_, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s")
		wantCode(t, err, duet.CodeMCPAuthFailed, "2000 scopes")
	})
	t.Run("new scopes every time", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int64
		url := mcptest.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i := n.Add(1)
			var s []string
			for j := range 10 {
				s = append(s, fmt.Sprintf("r%d-%d", i, j))
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer scope=%q, error="invalid_token"`, strings.Join(s, " ")))
			http.Error(w, "no", http.StatusUnauthorized)
		})) + "/mcp"
		e := newEnv(t)
		reg := e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
		var err error
		for range 20 {
			_, err = e.c.Sync(t.Context(), "alice", "s")
		}
		wantCode(t, err, duet.CodeMCPAuthFailed)
		st, serr := e.c.AuthStatus(t.Context(), "alice", "s")
		if serr != nil || len(st.Wanted) == 0 || len(st.Wanted) > 50 {
			t.Errorf("wanted scopes after %d challenges: %d, %v; want between 1 and 50", n.Load(), len(st.Wanted), serr)
		}
		if cred, _ := e.db.FindCredential(t.Context(), reg.CredentialRef); len(cred.Ciphertext) > 8<<10 {
			t.Errorf("the credential grew to %d bytes", len(cred.Ciphertext))
		}
	})
	t.Run("registered scopes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		many := make([]string, 51)
		for i := range many {
			many[i] = fmt.Sprintf("s%d", i)
		}
		for _, scopes := range [][]string{many, {strings.Repeat("x", 201)}, {"a\x1b[2J"}} {
			_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "s", URL: "http://127.0.0.1:1/mcp",
				OAuth: &mcpclient.OAuth{Grant: duet.AuthOAuth, Scopes: scopes}})
			wantCode(t, err, duet.CodeInvalidArgument, "scope")
		}
	})
}

// TestOAuthPlainHTTP: an OAuth registration over plain http:// is refused
// off loopback (a bearer token would cross the network in cleartext);
// loopback stays allowed for development.
func TestOAuthPlainHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, grant := range []*mcpclient.OAuth{{Grant: duet.AuthOAuth}, {Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "x", Issuer: "https://auth.example.com"}} {
		_, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "remote", URL: "http://mcp.example.com/mcp", OAuth: grant})
		wantCode(t, err, duet.CodeURLRefused, "https")
	}
	for i, u := range []string{"http://127.0.0.1:1/mcp", "http://localhost:1/mcp", "http://[::1]:1/mcp", "https://mcp.example.com/mcp"} {
		if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: fmt.Sprintf("s%d", i), URL: u,
			OAuth: &mcpclient.OAuth{Grant: duet.AuthOAuth}}); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// TestOAuthUnadvertisedIss: an authorization server that returns iss
// (RFC 9207) without advertising it in its metadata, as some providers do,
// is accepted when iss is its own.
func TestOAuthUnadvertisedIss(t *testing.T) {
	t.Parallel()
	_, url, _ := oauthServer(t, mcptest.AuthOptions{UnadvertisedIss: true}, mcptest.Protection{})
	e := newEnv(t)
	e.registerOAuth(t, "alice", "s", url, &mcpclient.OAuth{Grant: duet.AuthOAuth})
	if _, err := e.c.Authorizing(e.c.AutoApprover()).Login(t.Context(), "alice", "s"); err != nil {
		t.Fatal(err)
	}
}
