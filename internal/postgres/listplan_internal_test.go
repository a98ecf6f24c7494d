package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestTaskListReadsOwnTasksFromTheOwnerIndex: list_test_tasks reads the
// viewer's own tasks, row and all, from tasks_owner_id in id order, and
// counts from the indexes alone without a lookup of each visible task by id
// — the index pages a list visits are what a big store makes dearer
// (docs/performance.md).
func TestTaskListReadsOwnTasksFromTheOwnerIndex(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := t.Context()
	for _, q := range []string{
		`INSERT INTO tasks (id, owner, name, created_at, updated_at) SELECT 'task_' || lpad(i::text, 5, '0'), 'user' || (i % 5000), 't' || i, now(), now() FROM generate_series(1, 20000) AS i`,
		`VACUUM ANALYZE tasks`,
	} {
		if _, err := db.pool.Exec(c, q); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(q string, a ...any) string { return explain(t, db, q, a...) }
	count, page := taskListQueries(`TRUE`, false, `$2`, `$3`)
	// The planner picks index, index-only or bitmap scans by the
	// statistics; what the test pins is the shape: the count reads no task
	// by id (no tasks_pkey, no join to tasks), and the page merges the
	// viewer's own tasks, read by an index on owner, with the others'.
	if p := plan(count, "user1"); strings.Contains(p, "tasks_pkey") || strings.Contains(p+"\n", " on tasks t\n") || !strings.Contains(p, "tasks_owner_id") {
		t.Errorf("the count looks tasks up by id or reads more than the owner index:\n%s", p)
	}
	p := plan(page, "user1", "task_00000", 21)
	own, _, _ := strings.Cut(p, "Nested Loop")
	if !strings.Contains(p, "Merge Append") || !strings.Contains(own, "Index Cond: (owner = 'user1'::text)") || strings.Contains(own, "tasks_pkey") {
		t.Errorf("the page does not merge the viewer's own tasks, read by an index on owner, with the others':\n%s", p)
	}
}

// TestAssetListReadsOwnAssetsFromTheOwnerIndex: the Asset Center merges the
// viewer's own assets, read by their owner index, with the others', instead
// of looking each visible asset up by id.
func TestAssetListReadsOwnAssetsFromTheOwnerIndex(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := t.Context()
	for _, q := range []string{
		`INSERT INTO assets (id, owner, kind, name, version, created_at, updated_at) SELECT 'asset_' || lpad(i::text, 5, '0'), 'user' || (i % 5000), 'skill', 's' || i, 1, now(), now() FROM generate_series(1, 20000) AS i`,
		`INSERT INTO asset_versions (asset_id, version, body, created_at) SELECT 'asset_' || lpad(i::text, 5, '0'), 1, 'b', now() FROM generate_series(1, 20000) AS i`,
		`VACUUM ANALYZE assets`,
		`VACUUM ANALYZE asset_versions`,
	} {
		if _, err := db.pool.Exec(c, q); err != nil {
			t.Fatal(err)
		}
	}
	p := explain(t, db, assetListQuery(`TRUE`, `$2`), "user1", 200)
	// The own branch is the first under the Merge Append, up to the
	// others' ids (asset_shares).
	own, _, _ := strings.Cut(p, "asset_shares")
	if !strings.Contains(p, "Merge Append") || !strings.Contains(own, "Index Cond: (owner = 'user1'::text)") || strings.Contains(own, "assets_pkey") {
		t.Errorf("the Asset Center does not merge the viewer's own assets, read by their owner index, with the others':\n%s", p)
	}
}

// explain returns PostgreSQL's plan of q (EXPLAIN, costs off), a line per node.
func explain(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	return strings.Join(explainOn(t, db.pool, `COSTS OFF`, q, args...), "\n")
}

// explainOn returns the lines of EXPLAIN (opts) q run on on (a pool or a
// transaction: EXPLAIN ANALYZE runs q, so a test that must not keep its
// effects runs it in a transaction it rolls back).
func explainOn(t *testing.T, on interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, opts, q string, args ...any) []string {
	t.Helper()
	rows, err := on.Query(t.Context(), `EXPLAIN (`+opts+`) `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
