package postgres

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestCaseVersionsMigration: migration 00036 keeps each existing case's
// current version as its first known one (via "before"), with its source,
// author and time; the next save adds the version after it. The same as
// SQLite's test.
func TestCaseVersionsMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	cfg, err := ParseURL(url, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw := stdlib.OpenDBFromPool(pool)
	p, err := provider(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 35); err != nil {
		t.Fatal(err)
	}
	at1, at2 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), time.Date(2026, 2, 3, 4, 5, 6, 7000, time.UTC)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO tasks (id, owner, name, created_at, updated_at) VALUES ('task_1', 'alice', 'shop', now(), now())`, nil},
		{`INSERT INTO cases (id, task_id, key, title, source, source_hash, steps, version, status, created_by, created_at, updated_at) VALUES
			('case_1', 'task_1', 'login', 'Log in', 'key: login', 'h1', '[]', 3, 'active', 'alice', now(), $1),
			('case_2', 'task_1', 'gen', 'Generated', 'key: gen', 'h2', '[]', 1, 'draft', 'bob', now(), $2)`, []any{at1, at2}},
	} {
		if _, err := raw.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	raw.Close()
	pool.Close()
	db, err := Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, want := range map[string]duet.CaseVersion{
		"case_1": {Version: 3, Title: "Log in", Source: "key: login", SourceHash: "h1", SavedBy: "alice", SavedAt: at1},
		"case_2": {Version: 1, Title: "Generated", Source: "key: gen", SourceHash: "h2", SavedBy: "bob", SavedAt: at2},
	} {
		list, more, err := db.FindCaseVersions(ctx, id, 0, 0)
		if err != nil || more || len(list) != 1 || list[0].Version != want.Version {
			t.Fatalf("the versions of %s: %v %v %v", id, list, more, err)
		}
		got, err := db.FindCaseVersion(ctx, id, want.Version)
		if err != nil || got.Via != duet.SavedBefore || got.Source != want.Source || got.Title != want.Title || got.SourceHash != want.SourceHash ||
			got.SavedBy != want.SavedBy || !got.SavedAt.Equal(want.SavedAt) {
			t.Fatalf("the kept version of %s: %+v %v", id, got, err)
		}
	}
	d := &duet.Case{TaskID: "task_1", Key: "gen", Title: "Generated", Source: "key: gen\n# again", SourceHash: "h3", CreatedBy: "bob"}
	if err := db.SaveDraftCase(ctx, d); err != nil || d.Version != 2 {
		t.Fatalf("the next draft: %+v %v", d, err)
	}
	if list, _, err := db.FindCaseVersions(ctx, "case_2", 0, 0); err != nil || len(list) != 2 || list[0].Version != 2 || list[0].Via != duet.SavedAsDraft {
		t.Fatalf("the versions after the next save: %v %v", list, err)
	}
}
