package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

func provider(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectSQLite3, db, fsys)
}

// knownVersions are the versions of the embedded migrations, in order, as
// goose numbers them.
var knownVersions = sync.OnceValues(func() ([]int64, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var vs []int64
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs, nil
})

// schemaCurrent reports whether the database has applied exactly the
// migrations this duet embeds, each once, and nothing else — the one case
// in which goose would apply nothing and refuse nothing — reading the
// version table once. Anything else (a fresh file, a migration missing, a
// newer or unknown version, a row of a migration rolled back, an error)
// is false: goose then decides, so a stale schema is never served.
func schemaCurrent(ctx context.Context, db *sql.DB) bool {
	known, err := knownVersions()
	if err != nil || len(known) == 0 {
		return false
	}
	rows, err := db.QueryContext(ctx, `SELECT version_id, is_applied FROM goose_db_version WHERE version_id > 0 ORDER BY version_id, id`)
	if err != nil {
		return false
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var v int64
		var applied bool
		if err := rows.Scan(&v, &applied); err != nil || !applied || i >= len(known) || v != known[i] {
			return false
		}
		i++
	}
	return rows.Err() == nil && i == len(known)
}

// checkNotNewer refuses a database file migrated by a newer duet.
func checkNotNewer(ctx context.Context, p *goose.Provider) error {
	srcs := p.ListSources()
	current, known, err := p.GetVersions(ctx)
	if err != nil || len(srcs) == 0 {
		return nil // a fresh file has no version table yet
	}
	if current > known {
		return duet.Errorf(duet.CodeSchemaTooNew, "the database schema is at version %d, newer than this duet knows (%d): upgrade duet", current, known)
	}
	return nil
}

// errSchemaMismatch: a database readable, but at a schema version other
// than this duet's.
var errSchemaMismatch = errors.New("schema version mismatch")

// checkCurrent checks, without changing anything, that the database's
// schema is the one this duet knows: a read-only database cannot be
// migrated. Returns UNAVAILABLE, wrapping errSchemaMismatch for another
// version.
func checkCurrent(ctx context.Context, db *sql.DB, path string) error {
	p, err := provider(db)
	if err != nil {
		return duet.WrapError(duet.CodeInternal, err, "cannot read the embedded migrations")
	}
	current, known, err := p.GetVersions(ctx)
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "cannot read the schema of %s: %v", path, storerules.RootCause(err))
	}
	switch {
	case current < known:
		return duet.WrapError(duet.CodeUnavailable, errSchemaMismatch, "the database %s is at schema version %d and this duet needs %d; migrating it needs write access: run `duet migrate up` as a user who can write it", path, current, known)
	case current > known:
		return duet.WrapError(duet.CodeSchemaTooNew, errSchemaMismatch, "the database schema is at version %d, newer than this duet knows (%d): upgrade duet", current, known)
	}
	return nil
}

// Migrations reports, for `duet migrate status`, every migration this build
// knows and whether the database file at path has it, and the file's
// current version (0: nothing applied). It only reads: a missing file is
// not created, and an existing one is opened read-only (mode=ro), so goose's
// version table is not created either. Returns UNAVAILABLE.
func Migrations(ctx context.Context, path string) ([]*goose.MigrationStatus, int64, error) {
	// sql.Open connects lazily: nothing touches the file before the stat.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, 0, duet.WrapError(duet.CodeUnavailable, err, "cannot open database %s: %v", path, err)
	}
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return nil, 0, duet.WrapError(duet.CodeInternal, err, "cannot read the embedded migrations")
	}
	srcs := p.ListSources()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return storerules.MigrationStatus(ctx, db, database.DialectSQLite3, srcs, false)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, storerules.VersionTable).Scan(&n); err != nil {
		return nil, 0, duet.WrapError(duet.CodeUnavailable, err, "cannot read the schema of %s: %v", path, storerules.RootCause(err))
	}
	st, v, err := storerules.MigrationStatus(ctx, db, database.DialectSQLite3, srcs, n > 0)
	if err != nil {
		return nil, 0, duet.WrapError(duet.CodeUnavailable, err, "cannot read the schema of %s: %v", path, storerules.RootCause(err))
	}
	return st, v, nil
}
