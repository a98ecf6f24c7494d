package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestMigrateStatusIsReadOnlyWithExitCodes: `duet migrate status` only
// reads — on an empty database it creates nothing (no goose version table,
// no SQLite file) — and says what it found in its exit code: 3 pending, 0
// current, 4 newer than this duet; `duet migrate up` refuses a newer
// schema with SCHEMA_TOO_NEW (exit 4), not UNAVAILABLE. On both engines.
func TestMigrateStatusIsReadOnlyWithExitCodes(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		path := filepath.Join(home, "duet.db")
		e := &duetEnv{tr: &transcript{}, vars: map[string]string{"DUET_HOME": home, "HOME": home}}
		versionTable := func() bool {
			t.Helper()
			db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'goose_db_version'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n > 0
		}
		migrateExitCodes(t, e, func(stage string) {
			switch stage {
			case "empty":
				if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("migrate status created the database file: %v", err)
				}
				// An existing file without any table stays without one.
				db, err := sql.Open("sqlite", "file:"+path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(`CREATE TABLE unrelated (x INTEGER)`); err != nil {
					t.Fatal(err)
				}
				db.Close()
			case "empty again":
				if versionTable() {
					t.Fatal("migrate status created goose's version table")
				}
			case "newer":
				db, err := sql.Open("sqlite", "file:"+path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)`); err != nil {
					t.Fatal(err)
				}
			}
		})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		url := pgtest.URL(t)
		home := t.TempDir()
		e := &duetEnv{tr: &transcript{}, vars: map[string]string{"DUET_DATABASE_URL": url, "DUET_MASTER_KEY": newMasterKey(), "DUET_HOME": home, "HOME": home}}
		conn, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		migrateExitCodes(t, e, func(stage string) {
			switch stage {
			case "empty", "empty again":
				var tables int
				if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`).Scan(&tables); err != nil || tables != 0 {
					t.Fatalf("migrate status wrote to an empty database: %d tables (%v)", tables, err)
				}
			case "newer":
				if _, err := conn.Exec(t.Context(), `INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, true)`); err != nil {
					t.Fatal(err)
				}
			}
		})
	})
}

// migrateExitCodes runs the migrate commands through an empty, a migrated
// and a newer database; at checks the database at each stage.
func migrateExitCodes(t *testing.T, e *duetEnv, at func(stage string)) {
	t.Helper()
	expect := func(code int, args ...string) (string, string) {
		t.Helper()
		out, errs, got := e.run(t, args...)
		if got != code {
			t.Fatalf("duet %s: exit %d, want %d\n%s%s", strings.Join(args, " "), got, code, out, errs)
		}
		return out, errs
	}
	out, _ := expect(3, "migrate", "status")
	if !strings.Contains(out, "schema version: 0") || !strings.Contains(out, "pending: run `duet migrate up`") {
		t.Fatalf("status of an empty database: %s", out)
	}
	at("empty")
	expect(3, "migrate", "status")
	at("empty again")
	expect(0, "migrate", "up")
	out, _ = expect(0, "migrate", "status", "--json")
	var st struct {
		State   string `json:"state"`
		Pending int    `json:"pending"`
		Version int64  `json:"version"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.State != "current" || st.Pending != 0 || st.Version == 0 {
		t.Fatalf("status after up: %+v %v\n%s", st, err, out)
	}
	at("newer")
	_, errs := expect(4, "migrate", "status")
	if !strings.Contains(errs, "SCHEMA_TOO_NEW") || !strings.Contains(errs, "version 99, newer than this duet") {
		t.Fatalf("status of a newer schema: %s", errs)
	}
	out, _ = expect(4, "migrate", "status", "--json")
	if !strings.Contains(out, `"state": "newer"`) {
		t.Fatalf("status --json of a newer schema: %s", out)
	}
	_, errs = expect(4, "migrate", "up")
	if !strings.Contains(errs, "SCHEMA_TOO_NEW") || strings.Contains(errs, "UNAVAILABLE") {
		t.Fatalf("up on a newer schema: %s", errs)
	}
}
