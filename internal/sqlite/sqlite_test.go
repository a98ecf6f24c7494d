package sqlite_test

import (
	"os"
	"path/filepath"
	"strings"
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

// TestSharedStore runs the cases several processes on one database rely
// on, with two handles on one file.
func TestSharedStore(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (duet.Store, func() duet.Store) {
		path := filepath.Join(t.TempDir(), "duet.db")
		openAt := func() duet.Store {
			db, err := sqlite.Open(t.Context(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
		return openAt(), openAt
	})
}

// TestNewerSchemaRefused: a file migrated by a newer duet is refused with
// both versions in the message, not opened half-understood.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "duet.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(t.Context(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlite.Open(t.Context(), path, nil)
	if duet.ErrorCode(err) != duet.CodeSchemaTooNew || !strings.Contains(duet.ErrorMessage(err), "version 99, newer than this duet knows") {
		t.Fatalf("got %v", err)
	}
	ms, v, err := sqlite.Migrations(t.Context(), path)
	if err != nil || v != 99 || len(ms) == 0 {
		t.Fatalf("Migrations: version %d, %d known, %v", v, len(ms), err)
	}
}

func TestApprovalStore(t *testing.T) {
	storetest.RunApprovals(t, func(t *testing.T) storetest.ApprovalStore {
		return open(t).(*sqlite.DB)
	})
}

// TestAgreement runs the checks of points where the engines once differed.
func TestAgreement(t *testing.T) {
	storetest.RunAgreement(t, open)
}
