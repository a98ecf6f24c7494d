package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/storetest"
)

func TestAssetStore(t *testing.T) {
	storetest.RunAssets(t, func(t *testing.T) storetest.AssetStore {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
