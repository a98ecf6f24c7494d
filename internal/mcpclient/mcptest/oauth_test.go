package mcptest_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// The authorization server of the tests must refuse what a real provider
// refuses, or the OAuth client's tests prove nothing. Each test here failed
// against the lenient server it replaced.

// noRedirect is an HTTP client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type tokenAnswer struct {
	Access  string `json:"access_token"`
	Refresh string `json:"refresh_token"`
	Error   string `json:"error"`
}

func postToken(t *testing.T, as *mcptest.AuthServer, form url.Values) (int, tokenAnswer) {
	t.Helper()
	resp, err := http.PostForm(as.URL+"/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a tokenAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, a
}

// callMCP sends an initialize request with token to an MCP endpoint and
// returns the status.
func callMCP(t *testing.T, endpoint, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAuthServerAudience: an access token works only at the resource it was
// issued for.
func TestAuthServerAudience(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "pw"}})
	a := mcptest.Protected(t, mcptest.NewServer("a", nil), as, mcptest.Protection{})
	b := mcptest.Protected(t, mcptest.NewServer("b", nil), as, mcptest.Protection{})
	_, forA := postToken(t, as, url.Values{"grant_type": {"client_credentials"}, "client_id": {"svc"}, "client_secret": {"pw"}, "resource": {a}})
	_, forNone := postToken(t, as, url.Values{"grant_type": {"client_credentials"}, "client_id": {"svc"}, "client_secret": {"pw"}})
	if forA.Access == "" || forNone.Access == "" {
		t.Fatalf("tokens: %+v %+v", forA, forNone)
	}
	if got := callMCP(t, a, forA.Access); got != http.StatusOK {
		t.Errorf("the token at its own resource: got %d, want 200", got)
	}
	if got := callMCP(t, b, forA.Access); got != http.StatusUnauthorized {
		t.Errorf("a token issued for %s at %s: got %d, want 401", a, b, got)
	}
	if got := callMCP(t, a, forNone.Access); got != http.StatusUnauthorized {
		t.Errorf("a token issued for no resource: got %d, want 401", got)
	}
}

// authorizeCode runs the authorization code flow by hand for a dynamically
// registered public client and returns the token endpoint's answer and the
// authorization response's parameters.
func authorizeCode(t *testing.T, as *mcptest.AuthServer, resource string) (tokenAnswer, url.Values, string) {
	t.Helper()
	redirect := "http://127.0.0.1:1/callback"
	resp, err := http.Post(as.URL+"/register", "application/json", strings.NewReader(
		`{"redirect_uris":["`+redirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	verifier := "a-verifier-of-forty-three-characters-at-least-0123"
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect}, "state": {"s1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {resource}}
	resp, err = noRedirect.Get(as.URL + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("authorize: %d without a redirect", resp.StatusCode)
	}
	back := loc.Query()
	_, tok := postToken(t, as, url.Values{"grant_type": {"authorization_code"}, "client_id": {reg.ClientID}, "code": {back.Get("code")},
		"code_verifier": {verifier}, "redirect_uri": {redirect}, "resource": {resource}})
	return tok, back, reg.ClientID
}

// TestAuthServerIss: the authorization response names the issuer (RFC
// 9207), and the metadata says so.
func TestAuthServerIss(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{})
	_, back, _ := authorizeCode(t, as, "http://127.0.0.1:2/mcp")
	if back.Get("iss") != as.URL || back.Get("code") == "" {
		t.Errorf("authorization response %v: want code and iss=%s", back, as.URL)
	}
	resp, err := http.Get(as.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	if m["authorization_response_iss_parameter_supported"] != true {
		t.Errorf("metadata: authorization_response_iss_parameter_supported = %v, want true", m["authorization_response_iss_parameter_supported"])
	}
}

// TestAuthServerRefresh: a refresh names the grant's resource; a rotated
// refresh token used again revokes the whole grant.
func TestAuthServerRefresh(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{})
	resource := mcptest.Protected(t, mcptest.NewServer("a", nil), as, mcptest.Protection{})
	tok, _, client := authorizeCode(t, as, resource)
	if tok.Refresh == "" {
		t.Fatalf("code exchange: %+v", tok)
	}
	refresh := func(rt string, resource ...string) (int, tokenAnswer) {
		return postToken(t, as, url.Values{"grant_type": {"refresh_token"}, "client_id": {client}, "refresh_token": {rt}, "resource": resource})
	}
	if code, a := refresh(tok.Refresh, "http://127.0.0.1:9/other"); code != http.StatusBadRequest || a.Error != "invalid_target" {
		t.Errorf("refresh for another resource: got %d %+v, want 400 invalid_target", code, a)
	}
	if code, a := refresh(tok.Refresh); code != http.StatusBadRequest || a.Error != "invalid_target" {
		t.Errorf("refresh without the resource: got %d %+v, want 400 invalid_target", code, a)
	}
	code, next := refresh(tok.Refresh, resource)
	if code != http.StatusOK || next.Refresh == "" || next.Refresh == tok.Refresh {
		t.Fatalf("refresh: got %d %+v, want a new refresh token", code, next)
	}
	if got := callMCP(t, resource, next.Access); got != http.StatusOK {
		t.Fatalf("the refreshed token: got %d", got)
	}
	// The first refresh token again: a copy is in other hands.
	if code, a := refresh(tok.Refresh, resource); code != http.StatusBadRequest || a.Error != "invalid_grant" {
		t.Errorf("a reused refresh token: got %d %+v, want 400 invalid_grant", code, a)
	}
	if as.ReusedRefresh.Load() != 1 {
		t.Errorf("reuses detected: got %d, want 1", as.ReusedRefresh.Load())
	}
	if got := callMCP(t, resource, next.Access); got != http.StatusUnauthorized {
		t.Errorf("the grant's access token after the reuse: got %d, want 401 (revoked)", got)
	}
	if code, _ := refresh(next.Refresh, resource); code != http.StatusBadRequest {
		t.Errorf("the grant's newest refresh token after the reuse: got %d, want 400 (revoked)", code)
	}
}

// TestAuthServerAssertion: a client assertion must name ES256 and a JWT
// type, be short-lived, and is accepted once.
func TestAuthServerAssertion(t *testing.T) {
	t.Parallel()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{KeyClients: map[string]*ecdsa.PublicKey{"svc-key": &key.PublicKey}})
	now := time.Now()
	sign := func(header map[string]string, exp time.Time, jti string) string {
		h, _ := json.Marshal(header)
		c, _ := json.Marshal(map[string]any{"iss": "svc-key", "sub": "svc-key", "aud": as.URL, "iat": now.Unix(), "exp": exp.Unix(), "jti": jti})
		input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
		if header["alg"] != "ES256" {
			return input + "."
		}
		d := sha256.Sum256([]byte(input))
		r, s, _ := ecdsa.Sign(rand.Reader, key, d[:])
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return input + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	grant := func(assertion string) int {
		code, _ := postToken(t, as, url.Values{"grant_type": {"client_credentials"}, "client_assertion": {assertion},
			"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}})
		return code
	}
	es256 := map[string]string{"alg": "ES256", "typ": "JWT"}
	good := sign(es256, now.Add(time.Minute), "jti-1")
	if got := grant(good); got != http.StatusOK {
		t.Fatalf("a good assertion: got %d", got)
	}
	tests := []struct {
		name      string
		assertion string
	}{
		{"replayed", good},
		{"alg none", sign(map[string]string{"alg": "none", "typ": "JWT"}, now.Add(time.Minute), "jti-2")},
		{"typ of an access token", sign(map[string]string{"alg": "ES256", "typ": "at+jwt"}, now.Add(time.Minute), "jti-3")},
		{"valid for a day", sign(es256, now.Add(24*time.Hour), "jti-4")},
		{"no jti", sign(es256, now.Add(time.Minute), "")},
	}
	for _, tt := range tests {
		if got := grant(tt.assertion); got != http.StatusUnauthorized {
			t.Errorf("%s: got %d, want 401", tt.name, got)
		}
	}
	if got := grant(sign(map[string]string{"alg": "ES256", "typ": "client-authentication+jwt"}, now.Add(time.Minute), "jti-5")); got != http.StatusOK {
		t.Errorf("typ client-authentication+jwt: got %d, want 200", got)
	}
}
