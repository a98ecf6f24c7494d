package sqlite

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/duet-test/duet/internal/storerules"
)

var update = flag.Bool("update", false, "rewrite schema.sql from the embedded migrations")

// TestSchemaSnapshot: schema.sql is exactly what the embedded migrations
// leave in an empty database, and a database Open creates from it is the
// same, object for object and row for row, as one goose migrated. With
// -update it rewrites schema.sql instead.
func TestSchemaSnapshot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	migrated := gooseOnly(t, "")
	want := dumpSQL(t, migrated)
	if *update {
		if err := os.WriteFile("schema.sql", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("schema.sql rewritten")
	} else if schemaSnapshot != want {
		t.Fatal("schema.sql is not what the embedded migrations produce: run go test ./internal/sqlite -run TestSchemaSnapshot -update")
	}

	db, err := Open(ctx, filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, want := state(t, db.SQL()), state(t, migrated); got != want {
		t.Fatalf("a database created from schema.sql differs from a migrated one:\n%s", diffLines(got, want))
	}
	// And Open took the snapshot's path: its triggers come after every
	// other object (the migrations made some of them before later tables).
	var lastOther, firstTrigger int64
	if err := db.SQL().QueryRowContext(ctx, `SELECT
		(SELECT max(rowid) FROM sqlite_master WHERE type <> 'trigger'),
		(SELECT min(rowid) FROM sqlite_master WHERE type = 'trigger')`).Scan(&lastOther, &firstTrigger); err != nil {
		t.Fatal(err)
	}
	if firstTrigger < lastOther {
		t.Fatalf("Open migrated a fresh database without the snapshot (a trigger at %d before an object at %d)", firstTrigger, lastOther)
	}
}

// TestSnapshotBehind: a snapshot older than the migrations (schema.sql not
// yet regenerated after a new one) still gives the migrations' schema: goose
// applies the ones it lacks. And an existing database is never touched by
// the snapshot.
func TestSnapshotBehind(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	known, err := knownVersions()
	if err != nil || len(known) < 3 {
		t.Fatalf("embedded migrations: %v %v", known, err)
	}
	older := dumpSQL(t, gooseOnly(t, "", known[len(known)-3]))
	path := filepath.Join(t.TempDir(), "duet.db")
	db := rawOpen(t, path)
	if err := migrateFrom(ctx, db, older); err != nil {
		t.Fatal(err)
	}
	if got, want := state(t, db), state(t, gooseOnly(t, "")); got != want {
		t.Fatalf("an older snapshot and goose differ from goose alone:\n%s", diffLines(got, want))
	}

	// A database with a table of its own and no version table: the
	// snapshot is not applied over it (goose decides, and creates only
	// its own tables).
	other := rawOpen(t, filepath.Join(t.TempDir(), "other.db"))
	if _, err := other.ExecContext(ctx, `CREATE TABLE mine (x)`); err != nil {
		t.Fatal(err)
	}
	if err := createFromSnapshot(ctx, other, schemaSnapshot); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := other.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the snapshot was applied over an existing database: %d objects (%v)", n, err)
	}
}

// TestSnapshotOpenedTogether: handles opening one new file at once (as
// instances starting together do) create its schema once: every Open
// succeeds, and goose's version table holds each migration once.
func TestSnapshotOpenedTogether(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "duet.db")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := Open(ctx, path, nil)
			if err == nil {
				db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Open of a new file by one of four handles at once: %v", err)
		}
	}
	db := rawOpen(t, path)
	if got, want := state(t, db), state(t, gooseOnly(t, "")); got != want {
		t.Fatalf("a file four handles created at once differs from a migrated one:\n%s", diffLines(got, want))
	}
}

// rawOpen opens path with Open's connection settings and nothing else.
func rawOpen(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// gooseOnly returns a new database migrated by goose alone, to version
// upTo when one is given, in dir ("": a temporary one).
func gooseOnly(t *testing.T, dir string, upTo ...int64) *sql.DB {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	db := rawOpen(t, filepath.Join(dir, "goose.db"))
	p, err := provider(db)
	if err != nil {
		t.Fatal(err)
	}
	if len(upTo) > 0 {
		_, err = p.UpTo(t.Context(), upTo[0])
	} else {
		_, err = p.Up(t.Context())
	}
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// dumpSQL returns the SQL that recreates db in an empty database: its
// tables and indexes in the order they were made, their rows, goose's
// version rows (stamped when applied), then the triggers, so that the
// rows written do not fire them.
func dumpSQL(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	b.WriteString(`-- What the embedded migrations leave in an empty database: a fresh database
-- is created from this file in one transaction (snapshot.go). Generated from
-- the migrations; do not edit. After adding a migration, rewrite it with
--   go test ./internal/sqlite -run TestSchemaSnapshot -update
`)
	type object struct{ typ, name, sql string }
	var objects []object
	rows, err := db.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.typ, &o.name, &o.sql); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, o)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		if o.typ != "trigger" {
			b.WriteString(o.sql + ";\n")
		}
	}
	for _, o := range objects {
		if o.typ != "table" || o.name == storerules.VersionTable {
			continue
		}
		for _, r := range tableRows(t, db, o.name) {
			fmt.Fprintf(&b, "INSERT INTO %q VALUES (%s);\n", o.name, r)
		}
	}
	vrows, err := db.QueryContext(ctx, `SELECT version_id, is_applied FROM `+storerules.VersionTable+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for vrows.Next() {
		var v, applied int64
		if err := vrows.Scan(&v, &applied); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, fmt.Sprintf("(%d, %d)", v, applied))
	}
	if err := vrows.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "INSERT INTO %s (version_id, is_applied) VALUES %s;\n", storerules.VersionTable, strings.Join(versions, ", "))
	for _, o := range objects {
		if o.typ == "trigger" {
			b.WriteString(o.sql + ";\n")
		}
	}
	return b.String()
}

// tableRows returns the rows of table as SQL literals (SQLite's quote(),
// which keeps each value's storage class), in rowid order.
func tableRows(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	ctx := t.Context()
	cols, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		t.Fatal(err)
	}
	var quoted []string
	for cols.Next() {
		var c string
		if err := cols.Scan(&c); err != nil {
			t.Fatal(err)
		}
		quoted = append(quoted, fmt.Sprintf("quote(%q)", c))
	}
	if err := cols.Close(); err != nil {
		t.Fatal(err)
	}
	order := "rowid"
	if table == "sqlite_sequence" {
		order = "name"
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM %q ORDER BY %s`, strings.Join(quoted, " || ', ' || "), table, order))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// state describes everything a database holds but the times goose stamps
// its versions with: every schema object with its SQL, every table's rows
// (sqlite_sequence's too), the user version.
func state(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var typ, name, tbl, s string
		if err := rows.Scan(&typ, &name, &tbl, &s); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s on %s: %s\n", typ, name, tbl, s)
		if typ == "table" {
			tables = append(tables, name)
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(tables)
	for _, tb := range tables {
		if tb == storerules.VersionTable {
			continue
		}
		for _, r := range tableRows(t, db, tb) {
			fmt.Fprintf(&b, "row of %s: %s\n", tb, r)
		}
	}
	vrows, err := db.QueryContext(ctx, `SELECT id, version_id, is_applied FROM `+storerules.VersionTable+` ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for vrows.Next() {
		var id, v, applied int64
		if err := vrows.Scan(&id, &v, &applied); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "version row %d: %d applied=%d\n", id, v, applied)
	}
	if err := vrows.Close(); err != nil {
		t.Fatal(err)
	}
	var uv int64
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&uv); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "user_version %d\n", uv)
	return b.String()
}

// diffLines lists the lines of got and want that the other lacks.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}

// BenchmarkOpenNew is a first start's store: opening a new database file,
// created from schema.sql (snapshot) or by the migrations one by one
// (goose), as before the snapshot.
//
//	go test ./internal/sqlite -run '^$' -bench OpenNew
func BenchmarkOpenNew(b *testing.B) {
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(b.Context(), filepath.Join(b.TempDir(), "duet.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
	b.Run("goose", func(b *testing.B) {
		for b.Loop() {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "duet.db")+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
			if err != nil {
				b.Fatal(err)
			}
			p, err := provider(db)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Up(b.Context()); err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
}
