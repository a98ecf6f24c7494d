package postgres

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// Migrations reports, for `duet migrate status`, every migration this build
// knows and whether the database at url has it, and the database's current
// version (0: nothing applied, not even goose's version table). It only
// reads, in a READ ONLY transaction: an empty database stays empty (goose's
// own status would create its version table). Returns INVALID_ARGUMENT,
// UNAVAILABLE.
func Migrations(ctx context.Context, url string, opts *Options) ([]*goose.MigrationStatus, int64, error) {
	var out []*goose.MigrationStatus
	var version int64
	err := withProvider(ctx, url, opts, func(db *sql.DB, p *goose.Provider) error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)`, storerules.VersionTable).Scan(&exists); err != nil {
			return err
		}
		out, version, err = storerules.MigrationStatus(ctx, tx, database.DialectPostgres, p.ListSources(), exists)
		return err
	})
	return out, version, err
}

// Migrate applies every pending migration to the database at url (`duet
// migrate up`), holding the session lock that instances starting at the
// same time also take, and returns what it applied. It refuses a database
// newer than this build (SCHEMA_TOO_NEW). Returns INVALID_ARGUMENT,
// UNAVAILABLE, SCHEMA_TOO_NEW.
func Migrate(ctx context.Context, url string, opts *Options) ([]*goose.MigrationResult, error) {
	var out []*goose.MigrationResult
	err := withProvider(ctx, url, opts, func(_ *sql.DB, p *goose.Provider) error {
		if err := checkNotNewer(ctx, p); err != nil {
			return err
		}
		var err error
		out, err = p.Up(ctx)
		return err
	})
	return out, err
}

func withProvider(ctx context.Context, url string, opts *Options, fn func(*sql.DB, *goose.Provider) error) error {
	cfg, err := ParseURL(url, opts)
	if err != nil {
		return err
	}
	cfg.MaxConns, cfg.MinConns = 2, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "cannot connect to PostgreSQL at %s: %v", where(cfg), storerules.RootCause(err))
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "cannot connect to PostgreSQL at %s: %v", where(cfg), storerules.RootCause(err))
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return duet.WrapError(duet.CodeInternal, err, "cannot read the embedded migrations")
	}
	if err := fn(db, p); err != nil {
		if duet.ErrorCode(err) != duet.CodeInternal {
			return err
		}
		return duet.WrapError(duet.CodeUnavailable, err, "migrating the PostgreSQL database: %v", storerules.RootCause(err))
	}
	return nil
}
