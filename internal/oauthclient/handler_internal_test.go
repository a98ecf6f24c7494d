package oauthclient

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/netguard"
)

// guarded is the client of requests to authorization servers, through the
// guard p, as the MCP client makes it.
func guarded(p netguard.Policy) *http.Client {
	return &http.Client{Transport: Transport(p.Transport(nil)), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestOAuthGuard: requests to authorization servers go through the SSRF
// guard too, and its refusal is reported as URL_REFUSED even where the
// go-sdk reduces errors to text. (The MCP server itself would be refused
// first; this test starts at the OAuth step.)
func TestOAuthGuard(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "s3cret"}})
	reg := &duet.MCPServer{Owner: "ci", Name: "s", URL: as.URL + "/mcp", ServerKey: "mcp_x_00000000", Auth: duet.AuthClientCredentials}
	st := NewHandler(&Secret{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "s3cret", Issuer: as.URL}, 0,
		Options{HTTP: guarded(netguard.Policy{})})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, reg.URL, nil)
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody}
	err := st.authorize(t.Context(), nil, req, resp, nil, nil)
	if err == nil {
		t.Fatal("the grant reached a loopback authorization server the policy refuses")
	}
	err = Failure(t.Context(), reg, err)
	if duet.ErrorCode(err) != duet.CodeURLRefused || !strings.Contains(duet.ErrorMessage(err), "authorization server") ||
		!strings.Contains(duet.ErrorMessage(err), netguard.EnvAllowLoopback) {
		t.Fatalf("got %v, want URL_REFUSED naming the authorization server and %s", err, netguard.EnvAllowLoopback)
	}
	if as.ClientGrants.Load() != 0 {
		t.Errorf("the token endpoint was reached")
	}
}

// TestUnboundSecretRenewal: a renewal of a token stored without an issuer
// sends a client secret bound to none nowhere, and one bound to an issuer
// only to the token endpoint of that issuer.
func TestUnboundSecretRenewal(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "s3cret-unbound"}})
	unbound := &Secret{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "s3cret-unbound"}
	st := NewHandler(unbound, 0, Options{HTTP: guarded(netguard.Policy{AllowLoopback: true})})
	tok := &Token{ClientID: "svc", ClientSecret: "s3cret-unbound", TokenURL: as.URL + "/token"}
	if _, err := st.tokenRequest(t.Context(), unbound, tok, nil, nil); err == nil {
		t.Errorf("a renewal with an unbound secret was sent")
	}
	// Bound, the secret goes to its issuer's token endpoint only.
	bound := *unbound
	bound.Issuer = as.URL
	if _, err := st.tokenRequest(t.Context(), &bound, tok, nil, nil); err == nil {
		t.Errorf("a renewal carrying the secret went to a token endpoint of no known issuer")
	}
	if as.LastTokenRequest() != nil || as.ClientGrants.Load() != 0 {
		t.Fatalf("the authorization server received a token request: %v", as.LastTokenRequest())
	}
	tok.Issuer = as.URL
	if _, err := st.tokenRequest(t.Context(), &bound, tok, nil, nil); err != nil {
		t.Errorf("a renewal at the bound issuer: %v", err)
	}
}

// TestFlowErrorsNameNoSecret: what a failed OAuth step says names none of
// the registration's secrets — the enterprise grant's identity provider
// secret and ID token and the DPoP key included — whatever the failure
// quoted.
func TestFlowErrorsNameNoSecret(t *testing.T) {
	t.Parallel()
	_, dpop, err := newDPoPKey(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	sec := &Secret{Grant: duet.AuthEnterprise, ClientID: "app", ClientSecret: "cs-4410", IdPIssuer: "https://idp.example.com",
		IdPClientID: "duet", IdPClientSecret: "idp-secret-7781", IDToken: "eyJ.id-token-2290.sig", DPoPKey: dpop,
		Token: &Token{Access: "at-5521", Refresh: "rt-8812"}}
	st := NewHandler(sec, 0, Options{})
	err = st.flowError("authorizing", fmt.Errorf("the provider echoed %s %s %s %s %s %s", sec.ClientSecret, sec.IdPClientSecret, sec.IDToken,
		sec.DPoPKey, sec.Token.Access, sec.Token.Refresh), nil)
	for _, v := range []string{sec.ClientSecret, sec.IdPClientSecret, sec.IDToken, sec.DPoPKey, sec.Token.Access, sec.Token.Refresh} {
		if strings.Contains(err.Error(), v) {
			t.Errorf("the error names a secret (%.12s...): %v", v, err)
		}
	}
}
