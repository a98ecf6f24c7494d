package postgres_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestURLErrorsHideThePassword: a URL pgx cannot parse is INVALID_ARGUMENT
// with a reason, and neither the message nor the error chain quotes it.
func TestURLErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"postgres://duet:s3cret-pw@db:notaport/duet",
		"postgres://duet:s3cret-pw@db/duet?sslmode=sometimes",
		"postgres://duet:s3cret-pw@db/duet?connect_timeout=x",
	} {
		_, err := postgres.Open(t.Context(), u, nil)
		if duet.ErrorCode(err) != duet.CodeInvalidArgument || strings.Contains(err.Error(), "s3cret") || duet.ErrorMessage(err) == "" {
			t.Errorf("%s: got %v, want INVALID_ARGUMENT without the password", strings.Replace(u, "s3cret-pw", "***", 1), err)
		}
	}
}

// TestLibpqVariablesFillTheURL: what the URL leaves out comes from the
// libpq environment variables, as with psql.
func TestLibpqVariablesFillTheURL(t *testing.T) {
	t.Setenv("PGHOST", "db.internal")
	t.Setenv("PGPORT", "6543")
	t.Setenv("PGUSER", "duet")
	t.Setenv("PGPASSWORD", "from-env")
	t.Setenv("PGDATABASE", "duetdb")
	cfg, err := postgres.ParseURL("postgres://", &postgres.Options{MaxConns: 7, ConnectTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.ConnConfig
	if c.Host != "db.internal" || c.Port != 6543 || c.User != "duet" || c.Password != "from-env" || c.Database != "duetdb" || cfg.MaxConns != 7 || c.ConnectTimeout != 3*time.Second {
		t.Fatalf("got host %s port %d user %s database %s, max conns %d", c.Host, c.Port, c.User, c.Database, cfg.MaxConns)
	}
	// The URL wins over the environment.
	cfg, _ = postgres.ParseURL("postgresql://alice@other:5432/x", nil)
	if cfg.ConnConfig.Host != "other" || cfg.ConnConfig.User != "alice" || cfg.ConnConfig.Password != "from-env" {
		t.Fatalf("URL and environment: got %+v", cfg.ConnConfig.Config)
	}
}

// TestUnreachableIsUnavailable: a server that does not answer is
// UNAVAILABLE, named by host and port, never by its password.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := postgres.Open(t.Context(), "postgres://duet:s3cret-pw@"+addr+"/duet?sslmode=disable&connect_timeout=2", nil)
	if duet.ErrorCode(err) != duet.CodeUnavailable || !strings.Contains(duet.ErrorMessage(err), addr) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("got %v, want UNAVAILABLE naming %s", err, addr)
	}
}

// TestInstancesStartingTogetherMigrateOnce: eight instances opening an
// empty database at once all start; the migrations ran once.
func TestInstancesStartingTogetherMigrateOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			db, err := postgres.Open(t.Context(), url, nil)
			if err == nil {
				db.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
	}
	ms, version, err := postgres.Migrations(t.Context(), url, nil)
	latest, count := knownMigrations(t)
	if err != nil || version != latest || len(ms) != count {
		t.Fatalf("after: version %d, %d migrations, %v", version, len(ms), err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil || applied != count {
		t.Fatalf("version rows: %d %v, want %d (each migration applied once)", applied, err, count)
	}
}

// TestNewerSchemaRefused: a database migrated by a newer duet is refused
// at Open and by `duet migrate up`, with both versions in the message.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	openURL(t, url)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, true)`); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(t.Context(), url, nil)
	latest, _ := knownMigrations(t)
	if duet.ErrorCode(err) != duet.CodeSchemaTooNew || !strings.Contains(duet.ErrorMessage(err), fmt.Sprintf("version 99, newer than this duet knows (%d)", latest)) {
		t.Fatalf("Open: got %v", err)
	}
	if _, err := postgres.Migrate(t.Context(), url, nil); duet.ErrorCode(err) != duet.CodeSchemaTooNew || !strings.Contains(duet.ErrorMessage(err), "newer than this duet knows") {
		t.Fatalf("Migrate: got %v", err)
	}
}

// TestNoMigrateChecksTheSchema: an instance told not to migrate refuses a
// database that is behind and starts on a current one.
func TestNoMigrateChecksTheSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	if _, err := postgres.Open(t.Context(), url, &postgres.Options{NoMigrate: true}); !strings.Contains(duet.ErrorMessage(err), "duet migrate up") {
		t.Fatalf("an empty database without migrating: got %v", err)
	}
	if _, err := postgres.Migrate(t.Context(), url, nil); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(t.Context(), url, &postgres.Options{NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// knownMigrations returns the highest version and the number of the
// migrations this build embeds (the files of migrations/).
func knownMigrations(t *testing.T) (latest int64, count int) {
	t.Helper()
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var v int64
		if _, err := fmt.Sscanf(e.Name(), "%05d_", &v); err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		count++
		latest = max(latest, v)
	}
	return latest, count
}
