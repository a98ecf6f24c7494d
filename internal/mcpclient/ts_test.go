package mcpclient_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/mcpclient"
	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// TestTypeScriptServer calls a server built with the official TypeScript SDK.
func TestTypeScriptServer(t *testing.T) {
	t.Parallel()
	url := mcptest.StartTSServer(t, "ts-token")
	e := newEnv(t)
	reg := e.register(t, "alice", "ts", url, map[string]string{"Authorization": "Bearer ts-token"})
	if reg.ToolCount != 2 || reg.ServerName != "ts-sdk-server" || reg.Transport != duet.TransportStreamableHTTP {
		t.Fatalf("after sync: got %+v", reg)
	}
	for i := range 2 {
		res, err := e.invoke(t, "alice", reg.ServerKey, "echo", map[string]any{"text": "héllo"})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if res.Text() != "echo: héllo" || string(res.StructuredContent) != `{"echo":"héllo","length":5}` {
			t.Fatalf("got text %q structured %s", res.Text(), res.StructuredContent)
		}
	}
	res, err := e.invoke(t, "alice", reg.ServerKey, "fail", nil)
	if duet.ErrorCode(err) != duet.CodeMCPToolError || res == nil || res.Text() != "FAILED: on purpose" {
		t.Fatalf("fail: got %v, %+v", err, res)
	}
	if _, err := e.c.Register(t.Context(), mcpclient.Registration{Owner: "bob", Name: "ts", URL: url}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Sync(t.Context(), "bob", "ts"); duet.ErrorCode(err) != duet.CodeMCPAuthFailed || !strings.Contains(err.Error(), "401") {
		t.Fatalf("bob without a token: got %v, want MCP_AUTH_FAILED", err)
	}
}
