package oauthserver_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/oauthserver"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
	"github.com/duet-test/duet/internal/sqlite"
)

// env is Duet's authorization server on a real SQLite store behind an
// httptest server.
type env struct {
	t     *testing.T
	URL   string
	Store duet.OAuthStore

	mu    sync.Mutex
	audit []duet.AuditRecord // what the server audited, in order
}

// audited returns the records the server has audited so far.
func (e *env) audited() []duet.AuditRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.audit)
}

// engines are the stores the tests run on: SQLite, and PostgreSQL (a
// fresh schema of DUET_TEST_POSTGRES_URL; skipped without it).
var engines = map[string]func(t *testing.T) duet.OAuthStore{
	"sqlite": func(t *testing.T) duet.OAuthStore {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	},
	"postgres": func(t *testing.T) duet.OAuthStore {
		db, err := postgres.Open(t.Context(), pgtest.URL(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	},
}

func newEnv(t *testing.T, provider string, edit func(*oauthserver.Options)) *env {
	t.Helper()
	return newEnvOn(t, engines["sqlite"](t), provider, edit)
}

func newEnvOn(t *testing.T, db duet.OAuthStore, provider string, edit func(*oauthserver.Options)) *env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newEnvAt(t, ln, db, provider, edit)
}

// newEnvAt is newEnvOn listening on ln (an address known beforehand, as
// the provider's client registration needs Duet's callback URL).
func newEnvAt(t *testing.T, ln net.Listener, db duet.OAuthStore, provider string, edit func(*oauthserver.Options)) *env {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	if provider == "" {
		provider = "http://127.0.0.1:9" // no provider is reached
	}
	e := &env{t: t, URL: srv.URL, Store: db}
	o := oauthserver.Options{Issuer: srv.URL, Resource: srv.URL + "/mcp/http", Store: db,
		Provider: auth.NewVerifier(auth.IssuerOptions{Issuer: provider}), ClientID: "duet", ClientSecret: "duet-secret",
		Scopes: auth.Scopes{Read: "duet:read", Run: "duet:run"},
		Audit: func(r *duet.AuditRecord) {
			e.mu.Lock()
			e.audit = append(e.audit, *r)
			e.mu.Unlock()
		}}
	if edit != nil {
		edit(&o)
	}
	s := oauthserver.New(o)
	mux.Handle("/", s)
	return e
}

// post sends a form (or, with a JSON string, JSON) and returns the status
// and the decoded JSON answer.
func (e *env) post(u string, body any, hdr ...string) (int, map[string]any) {
	e.t.Helper()
	var rd *strings.Reader
	ctype := "application/x-www-form-urlencoded"
	switch b := body.(type) {
	case url.Values:
		rd = strings.NewReader(b.Encode())
	case string:
		rd, ctype = strings.NewReader(b), "application/json"
	}
	req, _ := http.NewRequestWithContext(e.t.Context(), "POST", u, rd)
	req.Header.Set("Content-Type", ctype)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// register registers a client with the token endpoint auth method given.
func (e *env) register(method string) (id, secret string) {
	e.t.Helper()
	status, out := e.post(e.URL+oauthserver.PathRegister, `{"redirect_uris":["http://127.0.0.1:9/cb"],"client_name":"test","token_endpoint_auth_method":"`+method+`"}`)
	if status != http.StatusCreated {
		e.t.Fatalf("register: %d %v", status, out)
	}
	id, _ = out["client_id"].(string)
	secret, _ = out["client_secret"].(string)
	return id, secret
}

// TestIdentityAssertionBounds: an ID-JAG buys at most the scopes the
// identity provider put in it (a client cannot ask for more at Duet), and
// buys them once: the same assertion presented again is refused.
func TestIdentityAssertionBounds(t *testing.T) {
	t.Parallel()
	idp := mcptest.StartIDJAGProvider(t)
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testIdentityAssertionBounds(t, idp, open(t))
		})
	}
}

func testIdentityAssertionBounds(t *testing.T, idp string, db duet.OAuthStore) {
	e := newEnvOn(t, db, idp, nil)
	app := "app-" + strings.ReplaceAll(t.Name(), "/", "-")
	client, secret := e.register("client_secret_basic")
	if status, out := e.post(idp+"/admin/clients", url.Values{"client_id": {app}, "resource_client_id": {client}}); status != 200 {
		t.Fatalf("admin: %d %v", status, out)
	}
	_, login := e.post(idp+"/login", url.Values{"user": {"alice"}, "password": {"verysecure"}, "client_id": {app}})
	jag := func(scope string) string {
		t.Helper()
		status, out := e.post(idp+"/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"},
			"requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"}, "subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"},
			"subject_token": {login["id_token"].(string)}, "client_id": {app}, "audience": {e.URL}, "resource": {e.URL + "/mcp/http"}, "scope": {scope}})
		if status != 200 {
			t.Fatalf("token exchange: %d %v", status, out)
		}
		return out["access_token"].(string)
	}
	grant := func(assertion, scope string) (int, map[string]any) {
		v := url.Values{"grant_type": {oauthserver.GrantJWTBearer}, "assertion": {assertion}}
		if scope != "" {
			v.Set("scope", scope)
		}
		return e.post(e.URL+oauthserver.PathToken, v, "Authorization", basic(client, secret))
	}

	// The provider allowed reading only: asking Duet for more is refused.
	readOnly := jag("duet:read")
	if status, out := grant(readOnly, "duet:read duet:run"); status != 400 || out["error"] != "invalid_scope" {
		t.Fatalf("an ID-JAG for duet:read, asked for duet:run too: %d %v, want invalid_scope", status, out)
	}
	status, out := grant(jag("duet:read"), "")
	if status != 200 || out["scope"] != "duet:read" {
		t.Fatalf("an ID-JAG for duet:read: %d %v", status, out)
	}
	// A narrower request is fine.
	if status, out := grant(jag("duet:read duet:run"), "duet:read"); status != 200 || out["scope"] != "duet:read" {
		t.Fatalf("narrowed: %d %v", status, out)
	}

	// Replayed: the second presentation of one assertion is refused.
	once := jag("duet:read")
	if status, out := grant(once, ""); status != 200 {
		t.Fatalf("first use: %d %v", status, out)
	}
	if status, out := grant(once, ""); status != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("the same ID-JAG again: %d %v, want invalid_grant", status, out)
	}

	// Each exchange is in the audit trail: who got a token, through which
	// client, and the refusals.
	var got []string
	for _, r := range e.audited() {
		if r.Method == "oauth/token:"+oauthserver.GrantJWTBearer {
			got = append(got, r.Caller+" "+r.Tool+" "+string(r.Outcome))
		}
	}
	want := []string{" " + client + " INVALID_ARGUMENT", "alice " + client + " OK", "alice " + client + " OK", "alice " + client + " OK", " " + client + " PERMISSION_DENIED"}
	if !slices.Equal(got, want) {
		t.Errorf("audited assertion grants:\n got %q\nwant %q", got, want)
	}
}

// TestEveryRequestIsAudited: each request to the authorization server's
// endpoints leaves one audit record (call source oauth) naming the client
// and the outcome as a stable code — registrations, refusals of them,
// failed client authentication, revocations — with what a client chose
// bounded before it is kept.
func TestEveryRequestIsAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", func(o *oauthserver.Options) { o.MaxRegistrations = 1 })
	id, secret := e.register("client_secret_basic")
	e.post(e.URL+oauthserver.PathRegister, `{"redirect_uris":["http://127.0.0.1:9/cb"]}`) // over the budget
	e.post(e.URL+oauthserver.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}, "Authorization", basic(id, "wrong"))
	e.post(e.URL+oauthserver.PathToken, url.Values{"grant_type": {"password"}}, "Authorization", basic(id, secret))
	e.post(e.URL+oauthserver.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"duet_rt_unknown"}}, "Authorization", basic(id, secret))
	e.post(e.URL+oauthserver.PathRevoke, url.Values{"token": {"duet_at_unknown"}}, "Authorization", basic(id, secret))
	long := strings.Repeat("c", 5000)
	resp, err := http.Get(e.URL + oauthserver.PathAuthorize + "?response_type=code&client_id=" + long)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// An authorization refused back to the client (here: another resource).
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(e.URL + oauthserver.PathAuthorize + "?" + url.Values{"response_type": {"code"}, "client_id": {id},
		"code_challenge": {strings.Repeat("A", 43)}, "code_challenge_method": {"S256"}, "resource": {"https://elsewhere.example/mcp"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc, _ := resp.Location(); resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("error") != "invalid_target" {
		t.Fatalf("authorization for another resource: %d %v, want a redirect with invalid_target", resp.StatusCode, loc)
	}

	var got []string
	for _, r := range e.audited() {
		if r.CallSource != duet.SourceOAuth || r.TraceID == "" || len(r.Tool) > 200 {
			t.Errorf("record %+v: want call source oauth, a trace id, the client bounded", r)
		}
		got = append(got, r.Method+" "+r.Tool+" "+string(r.Outcome))
	}
	want := []string{
		"oauth/register " + id + " OK",
		"oauth/register  RATE_LIMITED",
		"oauth/token " + id + " UNAUTHENTICATED", // the client claimed, its secret wrong
		"oauth/token " + id + " INVALID_ARGUMENT",
		"oauth/token:refresh_token " + id + " PERMISSION_DENIED",
		"oauth/revoke " + id + " OK",
		"oauth/authorize " + long[:200] + " INVALID_ARGUMENT",
		"oauth/authorize " + id + " INVALID_ARGUMENT", // refused back to the client: not OK
	}
	if !slices.Equal(got, want) {
		t.Errorf("audited:\n got %q\nwant %q", got, want)
	}
}

func basic(id, secret string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	return r.Header.Get("Authorization")
}

// TestRegistrationBudget: dynamic registration needs no credentials, so
// it is budgeted — past MaxRegistrations from one address the next is
// refused (429, Retry-After) and stores nothing — and its metadata is
// bounded in size.
func TestRegistrationBudget(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEnv(t, "", func(o *oauthserver.Options) { o.MaxRegistrations = 3; o.Now = clock })
	meta := `{"redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`
	for i := range 3 {
		if status, out := e.post(e.URL+oauthserver.PathRegister, meta); status != http.StatusCreated {
			t.Fatalf("registration %d: %d %v", i+1, status, out)
		}
	}
	req, _ := http.NewRequest("POST", e.URL+oauthserver.PathRegister, strings.NewReader(meta))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a 4th registration within the hour: %d (Retry-After %q), want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	now = now.Add(21 * time.Minute) // an hour/3 later: one more
	if status, out := e.post(e.URL+oauthserver.PathRegister, meta); status != http.StatusCreated {
		t.Fatalf("after the refill: %d %v", status, out)
	}
	if status, _ := e.post(e.URL+oauthserver.PathRegister, meta); status != http.StatusTooManyRequests {
		t.Fatalf("and then: %d, want 429", status)
	}

	// Metadata over 64 KiB is refused as such, not cut and parsed.
	e2 := newEnv(t, "", nil)
	huge := `{"redirect_uris":["http://127.0.0.1:9/cb"],"client_name":"` + strings.Repeat("x", 70<<10) + `"}`
	if status, out := e2.post(e2.URL+oauthserver.PathRegister, huge); status != http.StatusRequestEntityTooLarge || out["error"] != "invalid_client_metadata" {
		t.Fatalf("huge metadata: %d %v, want 413 invalid_client_metadata", status, out)
	}
}

// TestMetadataDocumentClientRules: a client named by its client ID
// metadata document is held to the rules of a registered one — its
// redirect URIs must be https, loopback http or a private-use scheme — so
// an authorization request cannot send the browser to a javascript: or
// plain-http address the document lists.
func TestMetadataDocumentClientRules(t *testing.T) {
	t.Parallel()
	var redirect string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"client_id": "https://" + r.Host + r.URL.Path, "client_name": "Doc client",
			"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	}))
	t.Cleanup(docs.Close)
	e := newEnv(t, "", func(o *oauthserver.Options) { o.MetadataClient = docs.Client() })
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		redirect string
		ok       bool
	}{
		{"javascript:alert(document.domain)//", false},
		{"http://attacker.example/cb", false},
		{"https://app.example/cb", true},
	} {
		redirect = tc.redirect
		q := url.Values{"client_id": {docs.URL + "/client.json"}, "redirect_uri": {tc.redirect}, "response_type": {"token"}}
		resp, err := noRedirects.Get(e.URL + oauthserver.PathAuthorize + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc := resp.Header.Get("Location")
		if tc.ok && (resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, tc.redirect+"?error=unsupported_response_type")) {
			t.Errorf("%s: %d %q, want the error sent back to it", tc.redirect, resp.StatusCode, loc)
		}
		if !tc.ok && (resp.StatusCode != http.StatusBadRequest || loc != "") {
			t.Errorf("%s: %d Location %q, want 400 and nothing sent", tc.redirect, resp.StatusCode, loc)
		}
	}
}

// TestAuthorizeBoundsWhatItKeeps: an authorization request is kept until
// the person comes back, by anyone who knows a client id (registration is
// open): its state is bounded and its code challenge must be one, before
// anything is stored — a refused request is sent back with the error and
// leaves nothing behind.
func TestAuthorizeBoundsWhatItKeeps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", nil)
	client, _ := e.register("none")
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	challenge := strings.Repeat("A", 43)
	for _, tc := range []struct{ name, state, challenge string }{
		{"a 1 MB state", strings.Repeat("s", 1<<20-4096), challenge},
		{"a 100 kB code challenge", "s1", strings.Repeat("A", 100<<10)},
		{"a code challenge that is no hash", "s1", "plain"},
	} {
		q := url.Values{"client_id": {client}, "redirect_uri": {"http://127.0.0.1:9/cb"}, "response_type": {"code"},
			"code_challenge": {tc.challenge}, "code_challenge_method": {"S256"}, "state": {tc.state}}
		resp, err := noRedirects.Get(e.URL + oauthserver.PathAuthorize + "?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("error") != "invalid_request" {
			t.Errorf("%s: %d %.200s, want invalid_request sent back", tc.name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
}

// TestMetadataDocumentFetchBounded: a client ID metadata document is on a
// server the client chose; one that never finishes its answer does not
// hold Duet's request (and a connection of Duet's) for longer than
// MetadataTimeout.
func TestMetadataDocumentFetchBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.Write([]byte(`{"client_id":`))
		w.(http.Flusher).Flush()
		select { // the rest never comes
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	e := newEnv(t, "", func(o *oauthserver.Options) {
		o.MetadataClient = slow.Client()
		o.MetadataTimeout = 300 * time.Millisecond
	})
	start := time.Now()
	q := url.Values{"client_id": {slow.URL + "/client.json"}, "redirect_uri": {"https://app.example/cb"}, "response_type": {"code"}}
	resp, err := http.Get(e.URL + oauthserver.PathAuthorize + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusBadRequest || took > 5*time.Second {
		t.Fatalf("a document that never ends: %d after %s, want 400 within the timeout", resp.StatusCode, took)
	}
}

// TestRepeatedParametersRefused: OAuth parameters must not be repeated
// (RFC 6749 §3.1, §3.2) — a repeated one is read one way here and another
// way elsewhere — so a request repeating one is refused, at the
// authorization endpoint before anything is sent to the application.
func TestRepeatedParametersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", nil)
	client, _ := e.register("none")
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {client}, "redirect_uri": {"http://127.0.0.1:9/cb", "http://127.0.0.1:9/cb"}, "response_type": {"token"}}
	resp, err := noRedirects.Get(e.URL + oauthserver.PathAuthorize + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Errorf("authorize with redirect_uri twice: %d %q, want 400 and nothing sent", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, path := range []string{oauthserver.PathToken, oauthserver.PathRevoke} {
		status, out := e.post(e.URL+path, url.Values{"client_id": {client, client}, "grant_type": {"refresh_token"}, "refresh_token": {"x"}, "token": {"x"}})
		if status != http.StatusBadRequest || out["error"] != "invalid_request" {
			t.Errorf("%s with client_id twice: %d %v, want invalid_request", path, status, out)
		}
	}
}
