package postgres_test

import (
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
	"github.com/duet-test/duet/internal/storetest"
)

// openURL opens a store on url, closed when the test ends.
func openURL(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestStore runs the whole store suite, the same cases the SQLite store
// passes, against a real PostgreSQL (a fresh schema per case).
func TestStore(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) (duet.Store, func() duet.Store) {
		url := pgtest.URL(t)
		return openURL(t, url), func() duet.Store { return openURL(t, url) }
	})
}
