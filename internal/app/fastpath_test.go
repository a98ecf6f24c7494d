package app_test

import (
	"io"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/config"
)

// TestMCPFastPathSetting: DUET_MCP_FAST_PATH reaches the MCP server — off,
// the go-sdk answers a plain tools/call (the fast paths serve nothing);
// on, the stdio fast path answers it (unless the whole test run has them
// off: DUET_MCP_FAST_PATH=off go test).
func TestMCPFastPathSetting(t *testing.T) {
	t.Parallel()
	runOff := os.Getenv("DUET_MCP_FAST_PATH") == "off"
	for _, v := range []string{"off", "on"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DUET_HOME": t.TempDir(), "DUET_LOG_LEVEL": "error", "DUET_MCP_FAST_PATH": v}
			cfg, err := config.Load(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			a, err := app.Open(t.Context(), cfg, app.Options{Stderr: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(a.Close)
			cs := stdio(t, a, "alice")
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("list_test_tasks: %v %v", res, err)
			}
			want := v == "on" && !runOff
			if served := a.MCP.FastPathServed(); served != 0 != want {
				t.Errorf("DUET_MCP_FAST_PATH=%s: the fast paths served %d calls", v, served)
			}
		})
	}
}
