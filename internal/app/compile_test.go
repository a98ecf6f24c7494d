package app_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/compiler"
)

// TestCaseNamesOnlyItsAuthorsServers: a case may call only MCP servers its
// author registered, whether it names them or writes a raw serverKey: the
// serverKey of someone else's registration (or of none) is refused when the
// suite is compiled for applying, before any run could call it with an
// executor's credentials.
func TestCaseNamesOnlyItsAuthorsServers(t *testing.T) {
	t.Parallel()
	a := openAppEnv(t, map[string]string{"DUET_LOG_LEVEL": "error"})
	ctx := t.Context()
	const bobsKey = "mcp_orders-example_0badcafe"
	if err := a.Store.CreateMCPServer(ctx, &duet.MCPServer{Owner: "bob", Name: "orders", URL: "https://orders.example/mcp", ServerKey: bobsKey}, nil); err != nil {
		t.Fatal(err)
	}
	suite := func(ref string) []byte {
		return []byte(`
task: {name: orders}
cases:
  - title: cancel
    steps:
      - mcpCall: {` + ref + `, tool: cancel_order, input: {orderId: A1}}
`)
	}
	for _, tt := range []struct {
		author, ref string
		ok          bool
	}{
		{"bob", "serverKey: " + bobsKey, true},
		{"bob", "server: orders", true},
		{"alice", "serverKey: " + bobsKey, false},
		{"alice", "server: orders", false},
		{"bob", "serverKey: mcp_nobody_0123abcd", false},
	} {
		_, err := compiler.CompileSuite(ctx, suite(tt.ref), "suite.yaml", a.CompilerOptions(ctx, tt.author))
		if tt.ok != (err == nil) {
			t.Errorf("%s writing %s: got %v, want ok=%v", tt.author, tt.ref, err, tt.ok)
			continue
		}
		if err != nil && (!strings.Contains(err.Error(), "suite.yaml:6:") || !strings.Contains(err.Error(), "have not registered")) {
			t.Errorf("%s writing %s: the error does not point at the step or say why: %v", tt.author, tt.ref, err)
		}
	}
}
