package sqlite_test

import (
	"path/filepath"
	"testing"

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
