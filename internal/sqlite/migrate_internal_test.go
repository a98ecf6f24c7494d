package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// TestSchemaCurrent: Open skips goose only for a database that has applied
// exactly the embedded migrations; one a migration behind is migrated (a
// stale schema is never served), and a version table goose would read
// differently (a version rolled back, applied twice, unknown) is left to
// goose.
func TestSchemaCurrent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	known, err := knownVersions()
	if err != nil || len(known) < 2 {
		t.Fatalf("embedded migrations: %v %v", known, err)
	}
	path := filepath.Join(t.TempDir(), "duet.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if schemaCurrent(ctx, raw) {
		t.Fatal("a fresh file is current")
	}
	p, err := provider(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, known[len(known)-2]); err != nil {
		t.Fatal(err)
	}
	if schemaCurrent(ctx, raw) {
		t.Fatal("a file one migration behind is current")
	}
	raw.Close()
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err = provider(db.SQL())
	if err != nil {
		t.Fatal(err)
	}
	if current, latest, err := p.GetVersions(ctx); err != nil || current != latest || latest != known[len(known)-1] {
		t.Fatalf("after Open: schema version %d of %d (%v): a stale schema was served", current, latest, err)
	}
	if !schemaCurrent(ctx, db.SQL()) {
		t.Fatal("a migrated file is not current")
	}
	for _, tt := range []struct{ name, do, undo string }{
		{"a version rolled back", `INSERT INTO goose_db_version (version_id, is_applied) VALUES (1, 0)`, `DELETE FROM goose_db_version WHERE is_applied = 0`},
		{"a version applied twice", `INSERT INTO goose_db_version (version_id, is_applied) VALUES (2, 1)`, `DELETE FROM goose_db_version WHERE id = (SELECT MAX(id) FROM goose_db_version)`},
		{"an unknown version", `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)`, `DELETE FROM goose_db_version WHERE version_id = 99`},
		{"a missing version", `DELETE FROM goose_db_version WHERE version_id = 3`, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (3, 1)`},
	} {
		if _, err := db.SQL().ExecContext(ctx, tt.do); err != nil {
			t.Fatal(err)
		}
		if schemaCurrent(ctx, db.SQL()) {
			t.Errorf("%s: current", tt.name)
		}
		if _, err := db.SQL().ExecContext(ctx, tt.undo); err != nil {
			t.Fatal(err)
		}
		if !schemaCurrent(ctx, db.SQL()) {
			t.Fatalf("%s, undone: not current", tt.name)
		}
	}
}

// BenchmarkOpenCurrent is the store's share of a cold start: opening a
// database whose schema is current.
func BenchmarkOpenCurrent(b *testing.B) {
	path := filepath.Join(b.TempDir(), "duet.db")
	db, err := Open(b.Context(), path, nil)
	if err != nil {
		b.Fatal(err)
	}
	db.Close()
	for b.Loop() {
		db, err := Open(b.Context(), path, nil)
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}
