package telemetry_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/telemetry"
	"github.com/duet-test/duet/internal/vault"
)

// TestInvokerKeepsTheSecretSource: with metrics or traces on, the decorated
// invoke() still names the executor's credential values (duet.SecretSource)
// and their generation, which a running case needs to scrub them by value;
// without them a run would keep a credential an endpoint echoed.
func TestInvokerKeepsTheSecretSource(t *testing.T) {
	t.Parallel()
	url := mcptest.Start(t, mcptest.Streamable(mcptest.NewServer("s", nil), false, true)) + "/mcp"
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key, _ := vault.GenerateKey()
	kr, err := vault.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.New(mcpclient.Options{Store: db, Keyring: func() (*vault.Keyring, error) { return kr, nil },
		Policy: netguard.Policy{AllowLoopback: true}, CallTimeout: 10 * time.Second})
	defer c.Close()
	reg, err := c.Register(t.Context(), mcpclient.Registration{Owner: "alice", Name: "s", URL: url,
		Headers: map[string]string{"X-Api-Key": "tele-CANARY-6b2f0d91"}})
	if err != nil {
		t.Fatal(err)
	}
	inv := telemetry.New(telemetry.Options{Metrics: true}).Invoker(c)
	src, ok := inv.(duet.SecretSource)
	if !ok {
		t.Fatal("the decorated invoker is no duet.SecretSource")
	}
	vals, err := src.Secrets(t.Context(), "alice", reg.ServerKey)
	if err != nil || !slices.Contains(vals, "tele-CANARY-6b2f0d91") {
		t.Fatalf("Secrets: %v %v", vals, err)
	}
	gen, ok := inv.(interface{ CredentialGeneration() uint64 })
	if !ok {
		t.Fatal("the decorated invoker has no CredentialGeneration")
	}
	if _, err := inv.Invoke(t.Context(), duet.InvokeRequest{Executor: "alice", ServerKey: reg.ServerKey, Tool: "add",
		Arguments: map[string]any{"a": 1, "b": 2}, Source: duet.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	if gen.CredentialGeneration() != c.CredentialGeneration() || c.CredentialGeneration() == 0 {
		t.Fatalf("generation %d, the client's %d", gen.CredentialGeneration(), c.CredentialGeneration())
	}
}
