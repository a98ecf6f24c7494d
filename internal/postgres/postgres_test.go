package postgres_test

import (
	"sync"
	"testing"
	"time"

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

// TestRunBudget runs the runs-per-minute suite against PostgreSQL, with a
// clock the suite moves.
func TestRunBudget(t *testing.T) {
	storetest.RunRunBudget(t, func(t *testing.T) (duet.Store, func(time.Duration)) {
		var mu sync.Mutex
		now := time.Now()
		db, err := postgres.Open(t.Context(), pgtest.URL(t), &postgres.Options{Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db, func(d time.Duration) {
			mu.Lock()
			now = now.Add(d)
			mu.Unlock()
		}
	})
}

// TestDeviceLeaseStore runs the device-lease suite against PostgreSQL, with
// a clock the suite moves.
func TestDeviceLeaseStore(t *testing.T) {
	storetest.RunDeviceLeases(t, func(t *testing.T) (duet.DeviceLeaseStore, func(time.Duration)) {
		var mu sync.Mutex
		now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
		db, err := postgres.Open(t.Context(), pgtest.URL(t), &postgres.Options{Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db, func(d time.Duration) {
			mu.Lock()
			now = now.Add(d)
			mu.Unlock()
		}
	})
}

// TestAgreement runs the checks of points where the engines once differed.
func TestAgreement(t *testing.T) {
	storetest.RunAgreement(t, func(t *testing.T) duet.Store { return openURL(t, pgtest.URL(t)) })
}
