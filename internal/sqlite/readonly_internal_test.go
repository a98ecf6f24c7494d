package sqlite

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
)

// populated returns the path of a closed database holding alice's task x.
func populated(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "duet.db")
	db, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplySuite(t.Context(), "alice", &duet.Suite{Task: duet.Task{Name: "x"}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return path
}

// TestOpenReadOnly: the read-only mode reads and refuses every write,
// whoever runs it (root included: the open mode refuses, not permissions).
func TestOpenReadOnly(t *testing.T) {
	t.Parallel()
	path := populated(t)
	db, err := openReadOnly(t.Context(), path, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.ReadOnly() {
		t.Error("ReadOnly: got false")
	}
	if _, err := db.FindTaskByName(t.Context(), "alice", "x"); err != nil {
		t.Errorf("read: got %v", err)
	}
	if _, err := db.ApplySuite(t.Context(), "alice", &duet.Suite{Task: duet.Task{Name: "y"}}); err == nil {
		t.Error("write: got nil, want it refused")
	}
	// A writable open of the same file is not read-only.
	w, err := Open(t.Context(), path, &Options{ReadOnlyFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.ReadOnly() {
		t.Error("a writable database opened with ReadOnlyFallback: got read-only")
	}
}

// TestReadOnlyNeedsTheCurrentSchema: a read-only database cannot be
// migrated, so one behind this duet is refused naming `duet migrate up`.
func TestReadOnlyNeedsTheCurrentSchema(t *testing.T) {
	t.Parallel()
	path := populated(t)
	db, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(t.Context(), `DELETE FROM goose_db_version WHERE version_id = (SELECT MAX(version_id) FROM goose_db_version)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = openReadOnly(t.Context(), path, &Options{})
	if !errors.Is(err, errSchemaMismatch) || !strings.Contains(duet.ErrorMessage(err), "run `duet migrate up`") {
		t.Fatalf("got %v, want the schema refused naming duet migrate up", err)
	}
}

// TestReadOnlyFallback: a database the process cannot write is opened
// read-only when the caller only reads, and refused otherwise. Root
// ignores permission bits, so as root the test runs itself again in a
// mount namespace where the database's directory is a read-only mount.
func TestReadOnlyFallback(t *testing.T) {
	path := os.Getenv("DUET_TEST_READONLY_DB") // set when run read-only
	if path == "" {
		t.Parallel()
		path = populated(t)
		dir := filepath.Dir(path)
		if os.Geteuid() == 0 {
			if _, err := exec.LookPath("unshare"); err != nil {
				t.Skipf("root ignores permission bits and there is no unshare to mount %s read-only: %v", dir, err)
			}
			cmd := exec.Command("unshare", "-m", "sh", "-c", `mount --bind -o ro "$1" "$1" && exec "$2" -test.run='^TestReadOnlyFallback$' -test.count=1 -test.v`, "sh", dir, os.Args[0])
			cmd.Env = append(os.Environ(), "DUET_TEST_READONLY_DB="+path)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlyFallback") {
				t.Fatalf("on a read-only mount: %v\n%s", err, out)
			}
			return
		}
		os.Chmod(path, 0o400)
		os.Chmod(dir, 0o500)
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
	}
	dir := filepath.Dir(path)
	if _, err := Open(t.Context(), path, nil); duet.ErrorCode(err) != duet.CodeUnavailable {
		t.Fatalf("writable open: got %v, want UNAVAILABLE", err)
	}
	db, err := Open(t.Context(), path, &Options{ReadOnlyFallback: true})
	if err != nil {
		t.Fatalf("read-only fallback: %v", err)
	}
	defer db.Close()
	if _, err := db.FindTaskByName(t.Context(), "alice", "x"); err != nil || !db.ReadOnly() {
		t.Errorf("read: got %v, read-only %v", err, db.ReadOnly())
	}
	if _, err := db.ApplySuite(t.Context(), "alice", &duet.Suite{Task: duet.Task{Name: "y"}}); err == nil {
		t.Error("write: got nil, want it refused")
	}
	if _, err := Open(t.Context(), filepath.Join(dir, "missing.db"), &Options{ReadOnlyFallback: true}); err == nil {
		t.Error("a missing database: got nil, want an error")
	}
}
