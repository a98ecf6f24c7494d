package mcpclient

import (
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

// TestOAuthUnboundSecretSentNowhere: a client secret or key stored without
// an issuer (registered before Duet required one, never authorized since)
// is sent to no authorization server, and the failure says how to bind it.
// (Renewals: oauthclient's TestUnboundSecretRenewal.)
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
}
