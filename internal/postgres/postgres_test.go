package postgres_test

import (
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
	"github.com/duet-test/duet/internal/storetest"
)

// open returns a store on a fresh schema of the test server.
func open(t *testing.T) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) duet.Store { return open(t) })
}

func TestAssetStore(t *testing.T) {
	storetest.RunAssets(t, func(t *testing.T) storetest.AssetStore { return open(t) })
}

func TestMCPClientStore(t *testing.T) {
	storetest.RunMCPClient(t, func(t *testing.T) duet.MCPClientStore { return open(t) })
}
