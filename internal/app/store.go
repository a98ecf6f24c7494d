package app

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/sqlite"
)

// OpenStore opens the database the configuration selects — SQLite in a
// file, or PostgreSQL for several instances — and applies pending
// migrations. This is the one place that names a driver: everything else
// gets a duet.Store. A database that cannot be opened is a *UsageError
// naming the setting to fix; no message contains a password.
func OpenStore(ctx context.Context, cfg *config.Config) (duet.Store, error) {
	return openStore(ctx, cfg, false, nil)
}

// openStore is OpenStore; readOnly lets a command that only reads open an
// existing SQLite database it cannot write (a read-only DUET_HOME)
// read-only; tracer, if set, sees every statement sent to PostgreSQL.
func openStore(ctx context.Context, cfg *config.Config, readOnly bool, tracer pgx.QueryTracer) (duet.Store, error) {
	if cfg.Engine() == config.EnginePostgres {
		o := postgresOptions(cfg)
		o.Tracer = tracer
		db, err := postgres.Open(ctx, cfg.DatabaseURL, o)
		if err != nil {
			return nil, &UsageError{fmt.Sprintf("%s (check DUET_DATABASE_URL and the PG* variables; docs/deployment.md)", duet.ErrorMessage(err))}
		}
		return db, nil
	}
	path, err := cfg.DatabasePath()
	if err != nil {
		return nil, &UsageError{err.Error()}
	}
	db, err := sqlite.Open(ctx, path, &sqlite.Options{ReadOnlyFallback: readOnly})
	if err != nil {
		return nil, &UsageError{fmt.Sprintf("%s (set DUET_HOME to a writable directory, or DUET_DATABASE_URL to a writable file)", duet.ErrorMessage(err))}
	}
	return db, nil
}

func postgresOptions(cfg *config.Config) *postgres.Options {
	return &postgres.Options{
		MaxConns: cfg.DBMaxConns, MinConns: cfg.DBMinConns, ReadLanes: cfg.DBReadLanes,
		MaxConnLifetime: cfg.DBMaxConnLifetime, MaxConnIdleTime: cfg.DBMaxConnIdleTime,
		ConnectTimeout: cfg.DBConnectTimeout,
	}
}

// Migration is one schema migration as `duet migrate status` shows it.
type Migration struct {
	Version   int64     `json:"version"`
	Name      string    `json:"name"`
	Applied   bool      `json:"applied"`
	AppliedAt time.Time `json:"appliedAt,omitzero"`
}

func fromGoose(st []*goose.MigrationStatus) []Migration {
	out := make([]Migration, 0, len(st))
	for _, s := range st {
		m := Migration{Version: s.Source.Version, Name: baseName(s.Source.Path), Applied: s.State == goose.StateApplied}
		if m.Applied {
			m.AppliedAt = s.AppliedAt.UTC()
		}
		out = append(out, m)
	}
	return out
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// SchemaNewer returns SCHEMA_TOO_NEW when the database's schema version is
// past every migration of ms (those this build knows), naming both.
func SchemaNewer(ms []Migration, version int64) error {
	if len(ms) > 0 && version > ms[len(ms)-1].Version {
		return duet.Errorf(duet.CodeSchemaTooNew, "the database schema is at version %d, newer than this duet knows (%d): upgrade duet (or restore a backup to go back)", version, ms[len(ms)-1].Version)
	}
	return nil
}

// MigrationStatus returns every migration this build knows with its state
// in the configured database, and the database's schema version. It
// changes nothing. Returns UNAVAILABLE, INVALID_ARGUMENT.
func MigrationStatus(ctx context.Context, cfg *config.Config) ([]Migration, int64, error) {
	if cfg.Engine() == config.EnginePostgres {
		st, v, err := postgres.Migrations(ctx, cfg.DatabaseURL, postgresOptions(cfg))
		return fromGoose(st), v, err
	}
	path, err := cfg.DatabasePath()
	if err != nil {
		return nil, 0, &UsageError{err.Error()}
	}
	st, v, err := sqlite.Migrations(ctx, path)
	return fromGoose(st), v, err
}

// MigrateUp applies every pending migration to the configured database and
// returns those it applied. Instances do the same when they start; an
// operator runs it first to migrate before rolling out. Returns
// UNAVAILABLE, INVALID_ARGUMENT, SCHEMA_TOO_NEW.
func MigrateUp(ctx context.Context, cfg *config.Config) ([]Migration, error) {
	before, version, err := MigrationStatus(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := SchemaNewer(before, version); err != nil {
		return nil, err
	}
	if cfg.Engine() == config.EnginePostgres {
		if _, err := postgres.Migrate(ctx, cfg.DatabaseURL, postgresOptions(cfg)); err != nil {
			return nil, err
		}
	} else {
		db, err := OpenStore(ctx, cfg) // SQLite migrates when opened
		if err != nil {
			return nil, err
		}
		db.Close()
	}
	after, _, err := MigrationStatus(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var applied []Migration
	for i, m := range after {
		if m.Applied && (i >= len(before) || !before[i].Applied) {
			applied = append(applied, m)
		}
	}
	return applied, nil
}
