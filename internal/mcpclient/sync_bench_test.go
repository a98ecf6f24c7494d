package mcpclient_test

import (
	"testing"

	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// BenchmarkSync1000Tools measures a catalog sync of a server with 1,000
// tools served 100 per page: the handshake, ten tools/list pages, and the
// archive written to SQLite in one transaction.
//
//	go test ./internal/mcpclient/ -run '^$' -bench Sync1000Tools -benchtime 20x
func BenchmarkSync1000Tools(b *testing.B) {
	url := mcptest.Start(b, mcptest.Streamable(mcptest.ManyTools(1000, 100), true, true)) + "/mcp"
	e := newEnv(b)
	reg := e.register(b, "alice", "many", url, nil)
	if reg.ToolCount != 1000 {
		b.Fatalf("synced %d tools, want 1000", reg.ToolCount)
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := e.c.Sync(b.Context(), "alice", "many")
		if err != nil || s.ToolCount != 1000 {
			b.Fatalf("sync: %v (%d tools)", err, s.ToolCount)
		}
	}
}
