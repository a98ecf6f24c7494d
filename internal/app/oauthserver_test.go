package app_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/oidctest"
)

func startBroker(t *testing.T) (string, *oidctest.Provider) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Duet's address must be known to register its callback at the
	// provider, and the provider's to configure Duet.
	duetLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + duetLn.Addr().String()
	p := oidctest.StartOn(t, ln, oidctest.Client{ID: "duet", Secret: "duet-secret", RedirectURIs: []string{base + "/oauth/callback"}})
	serveOAuthAppOn(t, duetLn, map[string]string{
		"DUET_OAUTH_ISSUER": p.URL, "DUET_OAUTH_SERVER": "true", "DUET_OAUTH_CLIENT_ID": "duet", "DUET_OAUTH_CLIENT_SECRET": "duet-secret",
		"DUET_MCP_ALLOW_LOOPBACK": "true",
	})
	return base, p
}

// TestOAuthServerTypeScriptClient is the zero-config sign-in: the official
// TypeScript SDK client, given only Duet's URL, discovers Duet's
// authorization server, registers, sends the person to sign in at the
// company's identity provider (a real OpenID provider), gets their consent
// and calls tools as them.
func TestOAuthServerTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir := mcptest.NodeDir(t)
	base, p := startBroker(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcptest.Node(t, dir), filepath.Join(dir, "ts-oauth-client.mjs"), base+"/mcp/http", p.Username(), oidctest.Password)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s", err, out)
	}
	var got struct {
		Tools      []string       `json:"tools"`
		Result     map[string]any `json:"result"`
		IsError    bool           `json:"isError"`
		Granted    string         `json:"granted"`
		HadRefresh bool           `json:"hadRefresh"`
		ClientID   string         `json:"clientId"`
	}
	if err := json.Unmarshal(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:], &got); err != nil {
		t.Fatalf("TypeScript client output: %v\n%s", err, out)
	}
	if len(got.Tools) < 7 || got.IsError || got.Result["tasks"] == nil || got.Granted != "duet:read duet:run" || !got.HadRefresh || !strings.HasPrefix(got.ClientID, "dcr_") {
		t.Fatalf("TypeScript client: got %+v", got)
	}
}

// TestOAuthServerFlow walks Duet's authorization server by hand: dynamic
// registration, code + PKCE through the provider's login and the consent
// screen, the user from the ID token, scopes, refresh-token rotation, a
// replayed refresh token revoking the sign-in, revocation, consent denied,
// and a wrong PKCE verifier.
func TestOAuthServerFlow(t *testing.T) {
	t.Parallel()
	base, p := startBroker(t)
	ctx := t.Context()
	meta, err := oauthex.GetAuthServerMeta(ctx, base+"/.well-known/oauth-authorization-server", base, http.DefaultClient)
	if err != nil || meta == nil || meta.RegistrationEndpoint == "" || !meta.ClientIDMetadataDocumentSupported {
		t.Fatalf("metadata: %+v %v", meta, err)
	}
	redirect := "http://127.0.0.1:9/cb"
	reg, err := oauthex.RegisterClient(ctx, meta.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirect}, ClientName: "Go test", TokenEndpointAuthMethod: "none"}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &oauth2.Config{ClientID: reg.ClientID, RedirectURL: redirect, Scopes: []string{"duet:read"},
		Endpoint: oauth2.Endpoint{AuthURL: meta.AuthorizationEndpoint, TokenURL: meta.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	signIn := func(consent string, verifier string) *url.URL {
		t.Helper()
		b := oidctest.NewBrowser(p.Username())
		b.Consent = consent
		back, err := b.Visit(ctx, cfg.AuthCodeURL("s1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", base+"/mcp/http")), redirect)
		if err != nil {
			t.Fatal(err)
		}
		if back.Query().Get("state") != "s1" || back.Query().Get("iss") != base {
			t.Fatalf("redirect back: %s", back)
		}
		return back
	}
	verifier := oauth2.GenerateVerifier()
	back := signIn("allow", verifier)
	tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.AccessToken, "duet_at_") || !strings.HasPrefix(tok.RefreshToken, "duet_rt_") || tok.Extra("scope") != "duet:read" {
		t.Fatalf("token: %+v scope %v", tok, tok.Extra("scope"))
	}
	// The code is single-use: a second exchange fails and revokes what the
	// first bought.
	if _, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier)); err == nil {
		t.Fatal("a code used twice was accepted")
	}
	if resp, _ := call(t, base, tok.AccessToken, "tools/list", `{}`); resp.StatusCode != 401 {
		t.Errorf("after the code was replayed, its access token: got %d, want 401", resp.StatusCode)
	}

	verifier = oauth2.GenerateVerifier()
	back = signIn("allow", verifier)
	tok, err = cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := call(t, base, tok.AccessToken, "tools/call", `{"name":"list_test_tasks","arguments":{}}`)
	if resp.StatusCode != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("list_test_tasks: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, base, tok.AccessToken, "tools/call", `{"name":"start_test_run","arguments":{"taskId":"task_x","idempotencyKey":"k"}}`)
	if resp.StatusCode != 403 || !strings.Contains(body, "INSUFFICIENT_SCOPE") {
		t.Errorf("start_test_run with duet:read only: %d %s", resp.StatusCode, body)
	}

	// Refresh rotates the refresh token; the old one replayed revokes the
	// whole sign-in.
	refresh := func(rt string) (*oauth2.Token, error) {
		return cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: rt, Expiry: time.Now().Add(-time.Hour)}).Token()
	}
	tok2, err := refresh(tok.RefreshToken)
	if err != nil || tok2.RefreshToken == tok.RefreshToken || tok2.AccessToken == tok.AccessToken {
		t.Fatalf("refresh: %+v %v", tok2, err)
	}
	if resp, _ := call(t, base, tok2.AccessToken, "tools/list", `{}`); resp.StatusCode != 200 {
		t.Fatalf("refreshed token: got %d", resp.StatusCode)
	}
	if _, err := refresh(tok.RefreshToken); err == nil {
		t.Fatal("a rotated refresh token was accepted again")
	}
	if resp, _ := call(t, base, tok2.AccessToken, "tools/list", `{}`); resp.StatusCode != 401 {
		t.Errorf("after a refresh token replay, the sign-in's access token: got %d, want 401", resp.StatusCode)
	}

	// Revocation (RFC 7009) ends the sign-in.
	verifier = oauth2.GenerateVerifier()
	back = signIn("allow", verifier)
	tok, err = cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	rr, err := http.PostForm(meta.RevocationEndpoint, url.Values{"token": {tok.RefreshToken}, "client_id": {reg.ClientID}})
	if err != nil || rr.StatusCode != 200 {
		t.Fatalf("revoke: %v %v", rr, err)
	}
	if resp, _ := call(t, base, tok.AccessToken, "tools/list", `{}`); resp.StatusCode != 401 {
		t.Errorf("after revocation: got %d, want 401", resp.StatusCode)
	}

	// Deny on the consent screen: the client gets access_denied.
	back = signIn("deny", oauth2.GenerateVerifier())
	if back.Query().Get("error") != "access_denied" || back.Query().Get("code") != "" {
		t.Errorf("denied consent: got %s", back)
	}
	// A wrong PKCE verifier is refused.
	back = signIn("allow", oauth2.GenerateVerifier())
	if _, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("wrong code_verifier: got %v, want invalid_grant", err)
	}
}

// TestOAuthServerPublicHost: behind its public name, Duet's OAuth pages
// answer requests for that host, and the consent form — which a browser
// posts with Duet's own origin — passes the Origin check without any
// DUET_ALLOWED_* setting.
func TestOAuthServerPublicHost(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_PUBLIC_URL": "https://duet.example.com", "DUET_OAUTH_ISSUER": "https://login.example.com",
		"DUET_OAUTH_SERVER": "true", "DUET_OAUTH_CLIENT_ID": "duet", "DUET_ADDR": "0.0.0.0:8420", "DUET_LOG_LEVEL": "error"})
	h := a.Handler(app.ServeOptions{})
	for _, c := range []struct {
		method, path, origin string
		want                 int
	}{
		{"GET", "/.well-known/oauth-protected-resource/mcp/http", "", 200},
		{"GET", "/.well-known/oauth-authorization-server", "", 200},
		{"POST", "/oauth/consent", "https://duet.example.com", 400}, // reaches the handler: an unknown sign-in
		{"POST", "/oauth/consent", "https://evil.example", 403},
	} {
		req := httptest.NewRequest(c.method, "https://duet.example.com"+c.path, strings.NewReader("consent=x&action=allow"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%s %s (Origin %q): got %d, want %d: %.200s", c.method, c.path, c.origin, w.Code, c.want, w.Body.String())
		}
	}
}

// TestOAuthRegistrationBudgetConfigured: DUET_OAUTH_MAX_REGISTRATIONS sets
// how many clients one address may register per hour (a proxy's single
// address needs more than the default).
func TestOAuthRegistrationBudgetConfigured(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_PUBLIC_URL": "https://duet.example.com", "DUET_OAUTH_ISSUER": "https://login.example.com",
		"DUET_OAUTH_SERVER": "true", "DUET_OAUTH_CLIENT_ID": "duet", "DUET_LOG_LEVEL": "error", "DUET_OAUTH_MAX_REGISTRATIONS": "2"})
	h := a.Handler(app.ServeOptions{})
	var got []int
	for range 3 {
		req := httptest.NewRequest("POST", "https://duet.example.com/oauth/register", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}`))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got = append(got, w.Code)
	}
	if !slices.Equal(got, []int{201, 201, 429}) {
		t.Fatalf("three registrations with a budget of 2: %v, want [201 201 429]", got)
	}
}
