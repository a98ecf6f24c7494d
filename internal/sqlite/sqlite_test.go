package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/storetest"
)

func open(t *testing.T) duet.Store {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStore(t *testing.T) {
	storetest.Run(t, open)
}

func TestOpenReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		// root ignores directory permissions; use a path under a file instead.
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o600)
		_, err := sqlite.Open(t.Context(), filepath.Join(f, "sub", "duet.db"), nil)
		if duet.ErrorCode(err) != duet.CodeUnavailable {
			t.Fatalf("got %v, want UNAVAILABLE", err)
		}
		return
	}
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	_, err := sqlite.Open(t.Context(), filepath.Join(ro, "duet.db"), nil)
	if duet.ErrorCode(err) != duet.CodeUnavailable {
		t.Fatalf("got %v, want UNAVAILABLE", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "duet.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplySuite(t.Context(), "alice", &duet.Suite{Task: duet.Task{Name: "x"}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.FindTaskByName(t.Context(), "alice", "x"); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

func TestApprovalStore(t *testing.T) {
	storetest.RunApprovals(t, func(t *testing.T) storetest.ApprovalStore {
		return open(t).(*sqlite.DB)
	})
}
