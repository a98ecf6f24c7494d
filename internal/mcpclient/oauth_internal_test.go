package mcpclient

import (
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/netguard"
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
	st := &oauthState{c: c, reg: reg, sec: &oauthSecret{Grant: duet.AuthClientCredentials, ClientID: "svc", ClientSecret: "s3cret"}}
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
