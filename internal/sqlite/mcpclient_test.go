package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/storetest"
)

func TestMCPClientStore(t *testing.T) {
	storetest.RunMCPClient(t, func(t *testing.T) duet.MCPClientStore {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

// TestRegistryCacheSeesHandWrittenChanges: the cached registry lookup is
// invalidated by the database itself (migration 00015's triggers), so a
// hand-written statement on mcp_tools or mcp_servers alone — nothing that
// goes through the store's methods — is seen at the next lookup.
func TestRegistryCacheSeesHandWrittenChanges(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "duet.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := t.Context()
	s := &duet.MCPServer{Owner: "alice", Name: "orders", URL: "https://orders.example/mcp", ServerKey: "mcp_orders_0badcafe"}
	if err := db.CreateMCPServer(c, s, nil); err != nil {
		t.Fatal(err)
	}
	cat := &duet.MCPCatalog{Transport: duet.TransportStreamableHTTP, Hash: "h", SyncedAt: time.Now(),
		Tools: []*duet.MCPTool{{Name: "query_order", Description: "v1", InputSchema: json.RawMessage(`{"type":"object"}`)}}}
	if err := db.SaveMCPCatalog(c, s.ID, cat); err != nil {
		t.Fatal(err)
	}
	find := func(tool string) (*duet.MCPServer, *duet.MCPTool, error) {
		return db.FindMCPServerTool(c, "alice", s.ServerKey, tool)
	}
	// Another process's handle, as a hand-written statement would be.
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	steps := []struct {
		stmt  string
		tool  string
		check func(*duet.MCPServer, *duet.MCPTool, error) bool
	}{
		{`UPDATE mcp_tools SET description = 'v2'`, "query_order", func(_ *duet.MCPServer, tl *duet.MCPTool, err error) bool {
			return err == nil && tl != nil && tl.Description == "v2"
		}},
		{`INSERT INTO mcp_tools (server_id, name, position) SELECT server_id, 'second', 1 FROM mcp_tools`, "second", func(_ *duet.MCPServer, tl *duet.MCPTool, err error) bool {
			return err == nil && tl != nil && tl.Name == "second"
		}},
		{`DELETE FROM mcp_tools WHERE name = 'query_order'`, "query_order", func(_ *duet.MCPServer, tl *duet.MCPTool, err error) bool {
			return err == nil && tl == nil
		}},
		{`UPDATE mcp_servers SET url = 'https://moved.example/mcp'`, "second", func(srv *duet.MCPServer, _ *duet.MCPTool, err error) bool {
			return err == nil && srv.URL == "https://moved.example/mcp"
		}},
		{`DELETE FROM mcp_servers`, "second", func(_ *duet.MCPServer, _ *duet.MCPTool, err error) bool {
			return duet.ErrorCode(err) == duet.CodeNotFound
		}},
	}
	for _, st := range steps {
		for range 3 { // cached before the change
			if _, _, err := find(st.tool); err != nil {
				t.Fatalf("before %s: %v", st.stmt, err)
			}
		}
		if _, err := raw.ExecContext(c, st.stmt); err != nil {
			t.Fatalf("%s: %v", st.stmt, err)
		}
		if srv, tool, err := find(st.tool); !st.check(srv, tool, err) {
			t.Fatalf("after %s: got %+v, %+v, %v", st.stmt, srv, tool, err)
		}
	}
}
