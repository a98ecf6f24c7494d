package mcpclient

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/vault"
)

// TestOAuthGuard: requests to authorization servers go through the SSRF
// guard too, and its refusal is reported as URL_REFUSED even where the
// go-sdk reduces errors to text. (The MCP server itself would be refused
// first; this test starts at the OAuth step.)
func TestOAuthGuard(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "s3cret"}})
	c := New(Options{Policy: netguard.Policy{}})
	defer c.Close()
	reg := &duet.MCPServer{Owner: "ci", Name: "s", URL: as.URL + "/mcp", ServerKey: "mcp_x_00000000", Auth: duet.AuthClientCredentials}
	st := &oauthState{c: c, reg: reg, sec: &oauthSecret{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "s3cret", Issuer: as.URL}}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, reg.URL, nil)
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody}
	err := st.authorize(t.Context(), req, resp, nil, nil)
	if err == nil {
		t.Fatal("the grant reached a loopback authorization server the policy refuses")
	}
	err = c.oauthFailure(t.Context(), reg, err)
	if duet.ErrorCode(err) != duet.CodeURLRefused || !strings.Contains(duet.ErrorMessage(err), "authorization server") ||
		!strings.Contains(duet.ErrorMessage(err), netguard.EnvAllowLoopback) {
		t.Fatalf("got %v, want URL_REFUSED naming the authorization server and %s", err, netguard.EnvAllowLoopback)
	}
	if as.ClientGrants.Load() != 0 {
		t.Errorf("the token endpoint was reached")
	}
}

// TestOAuthUnboundSecretSentNowhere: a client secret or key stored without
// an issuer (registered before Duet required one, never authorized since)
// is sent to no authorization server — not at an authorization, not at a
// renewal — and the failure says how to bind it. A token request carrying
// the client's own secret goes only to the token endpoint of the issuer it
// is bound to.
func TestOAuthUnboundSecretSentNowhere(t *testing.T) {
	t.Parallel()
	as := mcptest.NewAuthServer(t, mcptest.AuthOptions{Clients: map[string]string{"svc": "s3cret-unbound"}})
	url := mcptest.Protected(t, mcptest.NewServer("s", nil), as, mcptest.Protection{})
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key, _ := vault.GenerateKey()
	kr, _ := vault.NewKeyring(key)
	c := New(Options{Store: db, Keyring: func() (*vault.Keyring, error) { return kr, nil }, Policy: netguard.Policy{AllowLoopback: true}, CallTimeout: 10 * time.Second})
	defer c.Close()
	reg, err := c.Register(t.Context(), Registration{Owner: "ci", Name: "s", URL: url,
		OAuth: &OAuth{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "s3cret-unbound", Issuer: as.URL}})
	if err != nil {
		t.Fatal(err)
	}
	// What an older Duet stored: the secret, and no issuer.
	if _, _, err := c.swapSecret(t.Context(), reg, func(s *secret) bool { s.OAuth.Issuer = ""; return true }); err != nil {
		t.Fatal(err)
	}
	for _, op := range []func() error{
		func() error { _, err := c.Sync(t.Context(), "ci", "s"); return err },
		func() error { _, err := c.Login(t.Context(), "ci", "s"); return err },
	} {
		if err := op(); duet.ErrorCode(err) != duet.CodeMCPAuthFailed || !strings.Contains(duet.ErrorMessage(err), "--issuer URL --replace") {
			t.Errorf("with an unbound secret: got %v, want MCP_AUTH_FAILED asking to register it again with --issuer", err)
		}
	}
	// A renewal of a token stored without an issuer.
	unbound := &oauthSecret{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "s3cret-unbound"}
	st := &oauthState{c: c, reg: reg, sec: unbound}
	tok := &storedToken{ClientID: "svc", ClientSecret: "s3cret-unbound", TokenURL: as.URL + "/token"}
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
