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
	var b strings.Builder
	b.WriteString(`-- What the embedded migrations leave in an empty database: a fresh database
-- is created from this file in one transaction (snapshot.go). Generated from
-- the migrations; do not edit. After adding a migration, rewrite it with
--   go test ./internal/sqlite -run TestSchemaSnapshot -update
`)
	objects := query(t, db, `SELECT type, name, sql FROM sqlite_master
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid`)
	for _, o := range objects {
		if o[0] != "trigger" {
			b.WriteString(o[2] + ";\n")
		}
	}
	for _, o := range objects {
		if o[0] == "table" && o[1] != storerules.VersionTable {
			for _, r := range tableRows(t, db, o[1]) {
				fmt.Fprintf(&b, "INSERT INTO %q VALUES (%s);\n", o[1], r)
			}
		}
	}
	var versions []string
	for _, v := range query(t, db, `SELECT '(' || version_id || ', ' || is_applied || ')' FROM `+storerules.VersionTable+` ORDER BY id`) {
		versions = append(versions, v[0])
	}
	fmt.Fprintf(&b, "INSERT INTO %s (version_id, is_applied) VALUES %s;\n", storerules.VersionTable, strings.Join(versions, ", "))
	for _, o := range objects {
		if o[0] == "trigger" {
			b.WriteString(o[2] + ";\n")
		}
	}
	return b.String()
}

// tableRows returns the rows of table as SQL literals (SQLite's quote(),
// which keeps each value's storage class), in rowid order.
func tableRows(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	var quoted []string
	for _, c := range query(t, db, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table) {
		quoted = append(quoted, fmt.Sprintf("quote(%q)", c[0]))
	}
	order := "rowid"
	if table == "sqlite_sequence" {
		order = "name"
	}
	var out []string
	for _, r := range query(t, db, fmt.Sprintf(`SELECT %s FROM %q ORDER BY %s`, strings.Join(quoted, " || ', ' || "), table, order)) {
		out = append(out, r[0])
	}
	return out
}

// state describes everything a database holds but the times goose stamps
// its versions with: every schema object with its SQL, every table's rows
// (sqlite_sequence's too), the user version.
func state(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	var tables []string
	for _, o := range query(t, db, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`) {
		fmt.Fprintf(&b, "%s %s on %s: %s\n", o[0], o[1], o[2], o[3])
		if o[0] == "table" && o[1] != storerules.VersionTable {
			tables = append(tables, o[1])
		}
	}
	for _, tb := range tables {
		for _, r := range tableRows(t, db, tb) {
			fmt.Fprintf(&b, "row of %s: %s\n", tb, r)
		}
	}
	for _, v := range query(t, db, `SELECT id, version_id, is_applied FROM `+storerules.VersionTable+` ORDER BY id`) {
		fmt.Fprintf(&b, "version row %s: %s applied=%s\n", v[0], v[1], v[2])
	}
	fmt.Fprintf(&b, "user_version %s\n", query(t, db, `PRAGMA user_version`)[0][0])
	return b.String()
}

// query returns the rows of a statement on db, every column as text.
func query(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		row := make([]string, len(cols))
		dest := make([]any, len(cols))
		for i := range row {
			dest[i] = &row[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
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
