package sqlite_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/storetest"
)

func TestDeviceLeaseStore(t *testing.T) {
	storetest.RunDeviceLeases(t, func(t *testing.T) (duet.DeviceLeaseStore, func(time.Duration)) {
		var mu sync.Mutex
		now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), &sqlite.Options{Now: func() time.Time {
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

func TestRunBudget(t *testing.T) {
	storetest.RunRunBudget(t, func(t *testing.T) (duet.Store, func(time.Duration)) {
		var mu sync.Mutex
		now := time.Now()
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), &sqlite.Options{Now: func() time.Time {
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
