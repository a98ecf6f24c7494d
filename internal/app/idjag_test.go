package app_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/oauthserver"
)

func postForm(t *testing.T, u string, v url.Values) map[string]any {
	t.Helper()
	resp, err := http.PostForm(u, v)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v", u, resp.StatusCode, out)
	}
	return out
}

// TestOAuthServerIdentityAssertion is enterprise-managed authorization
// (SEP-990) end to end, both sides Duet's: Duet's MCP client, registered
// with --auth enterprise and a person's ID token from the company's
// identity provider, exchanges it there for an ID-JAG, trades that at
// Duet's authorization server (JWT bearer grant) for an access token, and
// calls Duet's tools as that person. An ID-JAG for another client is
// refused. The client is another Duet: no Duet is an MCP server of itself
// (docs/governance.md, "Loop budgets").
func TestOAuthServerIdentityAssertion(t *testing.T) {
	t.Parallel()
	idp := mcptest.StartIDJAGProvider(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, base := serveOAuthAppOn(t, ln, map[string]string{
		"DUET_OAUTH_ISSUER": idp, "DUET_OAUTH_SERVER": "true", "DUET_OAUTH_CLIENT_ID": "duet-login",
		"DUET_MCP_ALLOW_LOOPBACK": "true",
	})
	client := openAppEnv(t, map[string]string{"DUET_MCP_ALLOW_LOOPBACK": "true", "DUET_LOG_LEVEL": "error"})
	// The client holds a session (an event stream) open to the server:
	// close it before the server closes (cleanups run last first).
	t.Cleanup(func() { client.MCPClient.Close() })
	ctx := t.Context()
	// The app's confidential client at Duet's authorization server, and
	// the provider's administrator mapping it.
	reg, err := oauthex.RegisterClient(ctx, base+"/oauth/register", &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{"https://app.example/cb"}, ClientName: "Enterprise app", TokenEndpointAuthMethod: "client_secret_basic",
		GrantTypes: []string{"urn:ietf:params:oauth:grant-type:jwt-bearer"}}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	postForm(t, idp+"/admin/clients", url.Values{"client_id": {"enterprise-app"}, "resource_client_id": {reg.ClientID}})
	idToken := postForm(t, idp+"/login", url.Values{"user": {"alice"}, "password": {"verysecure"}, "client_id": {"enterprise-app"}})["id_token"].(string)

	auto := client.MCPClient.Authorizing(client.MCPClient.AutoApprover())
	if _, err := client.MCPClient.Register(ctx, mcpclient.Registration{Owner: "bob", Name: "duet", URL: base + "/mcp/http", OAuth: &mcpclient.OAuth{
		Grant: duet.AuthEnterprise, ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, Issuer: base,
		IdPIssuer: idp, IdPClientID: "enterprise-app", IDToken: idToken}}); err != nil {
		t.Fatal(err)
	}
	s, err := auto.Sync(ctx, "bob", "duet")
	if err != nil {
		t.Fatalf("sync through SEP-990: %v", err)
	}
	res, err := auto.Invoke(ctx, duet.InvokeRequest{Executor: "bob", ServerKey: s.ServerKey, Tool: "list_test_tasks", Arguments: map[string]any{}, Source: duet.SourceCLI})
	if err != nil || res.IsError {
		t.Fatalf("list_test_tasks through SEP-990: %v %+v", err, res)
	}
	a.Audit.Close()
	recs, _ := a.Store.FindAudit(ctx, duet.AuditFilter{Tool: "list_test_tasks", CallSource: duet.SourceMCP})
	if len(recs) == 0 || recs[0].Caller != "alice" {
		t.Fatalf("the call ran as %v, want alice (the ID token's person)", recs)
	}
	// The authorization server's own records: the token issued to alice
	// through the exchange, in the same audit trail.
	recs, _ = a.Store.FindAudit(ctx, duet.AuditFilter{CallSource: duet.SourceOAuth, Caller: "alice", Method: "oauth/token:" + oauthserver.GrantJWTBearer})
	if len(recs) == 0 || recs[0].Outcome != duet.OutcomeOK || recs[0].Tool != reg.ClientID {
		t.Fatalf("the ID-JAG exchange is not in the audit trail: %+v", recs)
	}

	// An ID-JAG issued for another client is refused.
	other, err := oauthex.RegisterClient(ctx, base+"/oauth/register", &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{"https://other.example/cb"}, TokenEndpointAuthMethod: "client_secret_post"}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	jag := postForm(t, idp+"/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:id-jag"}, "subject_token_type": {"urn:ietf:params:oauth:token-type:id_token"},
		"subject_token": {idToken}, "client_id": {"enterprise-app"}, "audience": {base}, "resource": {base + "/mcp/http"}})["access_token"].(string)
	resp, err := http.PostForm(base+"/oauth/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {jag},
		"client_id": {other.ClientID}, "client_secret": {other.ClientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Error string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 400 || e.Error != "invalid_grant" {
		t.Errorf("an ID-JAG of another client: got %d %q, want 400 invalid_grant", resp.StatusCode, e.Error)
	}
}
