package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/oidctest"
)

// serveOAuthAppOn opens an app whose public URL is the address of ln, with
// env (DUET_OAUTH_* and friends), serves it on ln and returns it and its
// URL.
func serveOAuthAppOn(t *testing.T, ln net.Listener, env map[string]string) (*app.App, string) {
	t.Helper()
	base := "http://" + ln.Addr().String()
	env["DUET_PUBLIC_URL"] = base
	env["DUET_LOG_LEVEL"] = "error"
	a := openAppEnv(t, env)
	srv := httptest.NewUnstartedServer(a.Handler(app.ServeOptions{}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return a, base
}

// providerToken signs the provider's first user in through client with
// scopes and returns the access token the provider issues.
func providerToken(t *testing.T, p *oidctest.Provider, c oidctest.Client, scopes ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cfg := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: c.RedirectURIs[0], Scopes: append([]string{"openid"}, scopes...),
		Endpoint: oauth2.Endpoint{AuthURL: p.URL + "/auth", TokenURL: p.URL + "/oauth/token"}}
	verifier := oauth2.GenerateVerifier()
	b := oidctest.NewBrowser(p.Username())
	back, err := b.Visit(ctx, cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), c.RedirectURIs[0])
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// call posts one JSON-RPC request to /mcp/http with token.
func call(t *testing.T, base, token, method, params string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp/http",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestOAuthResourceServer: with DUET_OAUTH_ISSUER, /mcp/http accepts the
// identity provider's access tokens for Duet's resource — issued by a real
// OpenID provider (zitadel/oidc's example OP) after a login — maps their
// scopes, and refuses tokens that are expired, for another audience, from
// another issuer, unsigned (alg none) or without the scope; a key rotation
// at the provider is followed.
func TestOAuthResourceServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resourceLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + resourceLn.Addr().String()
	resource := base + "/mcp/http"
	duetClient := oidctest.Client{ID: "copilot", Secret: "copilot-secret", RedirectURIs: []string{"http://127.0.0.1:9/cb"}, Audience: []string{resource}}
	otherClient := oidctest.Client{ID: "wiki", Secret: "wiki-secret", RedirectURIs: []string{"http://127.0.0.1:9/cb"}}
	p := oidctest.StartOn(t, ln, duetClient, otherClient)
	other := oidctest.Start(t, duetClient) // another issuer, same client and audience

	env := map[string]string{"DUET_OAUTH_ISSUER": p.URL, "DUET_PUBLIC_URL": base, "DUET_LOG_LEVEL": "error"}
	a := openAppEnv(t, env)
	srv := httptest.NewUnstartedServer(a.Handler(app.ServeOptions{}))
	srv.Listener.Close()
	srv.Listener = resourceLn
	srv.Start()
	t.Cleanup(srv.Close)

	// Protected resource metadata at both well-known addresses.
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp/http"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			ScopesSupported      []string `json:"scopes_supported"`
		}
		json.NewDecoder(resp.Body).Decode(&prm)
		resp.Body.Close()
		if prm.Resource != resource || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != p.URL || strings.Join(prm.ScopesSupported, " ") != "duet:read duet:run" {
			t.Errorf("%s: got %+v", path, prm)
		}
	}
	// No token: 401 naming the metadata and the scopes.
	resp, _ := call(t, base, "", "tools/list", `{}`)
	want := `Bearer realm="duet", scope="duet:read duet:run", resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp/http"`
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("no token: got %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}

	readTok := providerToken(t, p, duetClient, "duet:read")
	resp, body := call(t, base, readTok, "tools/call", `{"name":"list_test_tasks","arguments":{}}`)
	if resp.StatusCode != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("read token, list_test_tasks: got %d %s", resp.StatusCode, body)
	}
	// The audit names the user of the token's sub claim, source mcp.
	// A read-only token cannot start a run: 403 with the step-up challenge.
	resp, body = call(t, base, readTok, "tools/call", `{"name":"start_test_run","arguments":{"taskId":"task_x","idempotencyKey":"k"}}`)
	if resp.StatusCode != 403 || !strings.Contains(body, "INSUFFICIENT_SCOPE") ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="duet:read duet:run"`) {
		t.Errorf("read token, start_test_run: got %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	// The token's audience is /mcp/http: the REST API (where a token
	// could mint personal tokens or register servers) refuses it.
	for _, rq := range []struct{ method, path, body string }{
		{"GET", "/api/v1/tasks", ""},
		{"POST", "/api/v1/tokens", `{"name":"escalate"}`},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), rq.method, base+rq.path, strings.NewReader(rq.body))
		req.Header.Set("Authorization", "Bearer "+readTok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(string(b), "UNAUTHENTICATED") {
			t.Errorf("OAuth token at %s %s: got %d %s, want 401 UNAUTHENTICATED", rq.method, rq.path, resp.StatusCode, b)
		}
	}
	runTok := providerToken(t, p, duetClient, "duet:read", "duet:run")
	resp, body = call(t, base, runTok, "tools/call", `{"name":"start_test_run","arguments":{"taskId":"task_x","idempotencyKey":"k"}}`)
	if resp.StatusCode != 200 || !strings.Contains(body, "NOT_FOUND") {
		t.Errorf("run token, start_test_run of a missing task: got %d %s, want 200 with NOT_FOUND", resp.StatusCode, body)
	}

	refused := map[string]string{
		"no Duet scope":     providerToken(t, p, duetClient, "profile"),
		"another audience":  providerToken(t, p, otherClient, "duet:read"),
		"another issuer":    providerToken(t, other, duetClient, "duet:read"),
		"unsigned":          unsigned(readTok),
		"signature altered": readTok[:len(readTok)-4] + "AAAA",
		"not a JWT":         "opaque-token",
	}
	for name, tok := range refused {
		resp, body := call(t, base, tok, "tools/call", `{"name":"list_test_tasks","arguments":{}}`)
		wantStatus, wantHeader := 401, `error="invalid_token"`
		if name == "no Duet scope" {
			wantStatus, wantHeader = 403, `error="insufficient_scope"`
		}
		if resp.StatusCode != wantStatus || !strings.Contains(resp.Header.Get("WWW-Authenticate"), wantHeader) {
			t.Errorf("%s: got %d %q %s, want %d with %s", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, wantStatus, wantHeader)
		}
	}

	// Expired: the same token, an hour later by Duet's clock.
	expired := app.VerifierAt(a, time.Now().Add(time.Hour))
	if _, err := expired.Verify(t.Context(), readTok, app.AccessExpect(a)); duet.ErrorCode(err) != duet.CodeUnauthenticated || !strings.Contains(err.Error(), "exp") {
		t.Errorf("an expired token: got %v, want UNAUTHENTICATED (exp)", err)
	}

	// Key rotation at the provider: a token signed with the new key is
	// accepted (Duet fetches the key set again), and from then on the old
	// key is no longer trusted.
	p.Rotate()
	rotated := providerToken(t, p, duetClient, "duet:read")
	deadline := time.Now().Add(time.Minute) // Duet fetches keys at most once a second; a minute is a loaded machine's budget
	for {
		resp, body := call(t, base, rotated, "tools/list", `{}`)
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("token signed with the rotated key: got %d %s", resp.StatusCode, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp, _ := call(t, base, readTok, "tools/list", `{}`); resp.StatusCode != 401 {
		t.Errorf("token signed with the retired key: got %d, want 401", resp.StatusCode)
	}

	// The go-sdk client with the token reaches the tools.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: &http.Client{Transport: bearer{rotated}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("go-sdk client: %v %+v", err, res)
	}
	recs, err := a.Store.FindAudit(t.Context(), duet.AuditFilter{Tool: "list_test_tasks", Outcome: duet.OutcomeOK})
	if err != nil || len(recs) == 0 {
		t.Fatalf("audit: %v %d", err, len(recs))
	}
	a.Audit.Close()
}

// unsigned is tok re-encoded with alg none and no signature: the claims of
// a real token, which a verifier that honours "alg" would accept.
func unsigned(tok string) string {
	parts := strings.Split(tok, ".")
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
}
