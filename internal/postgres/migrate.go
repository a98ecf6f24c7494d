package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/duet-test/duet"
)

// Migrations reports, for `duet migrate status`, every migration this build
// knows and whether the database at url has it, and the database's current
// version. It changes nothing (but creates goose's version table in an
// empty database). Returns INVALID_ARGUMENT, UNAVAILABLE.
func Migrations(ctx context.Context, url string, opts *Options) ([]*goose.MigrationStatus, int64, error) {
	var out []*goose.MigrationStatus
	var version int64
	err := withProvider(ctx, url, opts, func(p *goose.Provider) error {
		var err error
		if out, err = p.Status(ctx); err != nil {
			return err
		}
		version, err = p.GetDBVersion(ctx)
		return err
	})
	return out, version, err
}

// Migrate applies every pending migration to the database at url (`duet
// migrate up`), holding the session lock that instances starting at the
// same time also take, and returns what it applied. It refuses a database
// newer than this build. Returns INVALID_ARGUMENT, UNAVAILABLE.
func Migrate(ctx context.Context, url string, opts *Options) ([]*goose.MigrationResult, error) {
	var out []*goose.MigrationResult
	err := withProvider(ctx, url, opts, func(p *goose.Provider) error {
		if err := checkNotNewer(ctx, p); err != nil {
			return err
		}
		var err error
		out, err = p.Up(ctx)
		return err
	})
	return out, err
}

func withProvider(ctx context.Context, url string, opts *Options, fn func(*goose.Provider) error) error {
	cfg, err := ParseURL(url, opts)
	if err != nil {
		return err
	}
	cfg.MaxConns, cfg.MinConns = 2, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "cannot connect to PostgreSQL at %s: %v", where(cfg), rootCause(err))
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return duet.WrapError(duet.CodeUnavailable, err, "cannot connect to PostgreSQL at %s: %v", where(cfg), rootCause(err))
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return duet.WrapError(duet.CodeInternal, err, "cannot read the embedded migrations")
	}
	if err := fn(p); err != nil {
		if duet.ErrorCode(err) != duet.CodeInternal {
			return err
		}
		return duet.WrapError(duet.CodeUnavailable, err, "migrating the PostgreSQL database: %v", rootCause(err))
	}
	return nil
}
