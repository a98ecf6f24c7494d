package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/duet-test/duet"
)

// TestCaseVersionsMigration: migration 00036 keeps each existing case's
// current version as its first known one (via "before"), with its source,
// author and time; the next save adds the version after it.
func TestCaseVersionsMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "duet.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 35); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO tasks (id, owner, name, created_at, updated_at) VALUES ('task_1', 'alice', 'shop', 1, 1)`,
		`INSERT INTO cases (id, task_id, key, title, source, source_hash, steps, version, status, created_by, created_at, updated_at) VALUES
			('case_1', 'task_1', 'login', 'Log in', 'key: login', 'h1', '[]', 3, 'active', 'alice', 1, 5000000),
			('case_2', 'task_1', 'gen', 'Generated', 'key: gen', 'h2', '[]', 1, 'draft', 'bob', 1, 6000000)`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, want := range map[string]duet.CaseVersion{
		"case_1": {Version: 3, Title: "Log in", Source: "key: login", SourceHash: "h1", SavedBy: "alice", SavedAt: fromMicros(5000000)},
		"case_2": {Version: 1, Title: "Generated", Source: "key: gen", SourceHash: "h2", SavedBy: "bob", SavedAt: fromMicros(6000000)},
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
