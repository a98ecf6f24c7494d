package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// queryPlan returns SQLite's EXPLAIN QUERY PLAN of q, one line per step,
// with as many of args as q has placeholders.
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	var lines []string
	for _, n := range planNodes(t, db, q, args...) {
		lines = append(lines, n.detail)
	}
	return strings.Join(lines, "\n")
}

// planNode is a step of EXPLAIN QUERY PLAN: its id, its parent's and what
// it does.
type planNode struct {
	id, parent int
	detail     string
}

// planNodes returns the steps of SQLite's EXPLAIN QUERY PLAN of q in order,
// with as many of args as q has placeholders.
func planNodes(t *testing.T, db *DB, q string, args ...any) []planNode {
	t.Helper()
	stmt, err := db.db.PrepareContext(t.Context(), "EXPLAIN QUERY PLAN "+q)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	var rows *sql.Rows
	for k := len(args); k >= 0; k-- {
		if rows, err = stmt.QueryContext(t.Context(), args[:k]...); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var nodes []planNode
	for rows.Next() {
		var n planNode
		var unused int
		if err := rows.Scan(&n.id, &n.parent, &unused, &n.detail); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// TestTaskListReadsOwnTasksFromTheOwnerIndex: list_test_tasks reads the
// viewer's own tasks, row and all, from tasks_owner_id in id order, and
// counts without a lookup of each visible task by id — the index pages a
// list visits are what a big store makes dearer (docs/performance.md).
func TestTaskListReadsOwnTasksFromTheOwnerIndex(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 200 {
		if _, err := db.db.ExecContext(t.Context(), `INSERT INTO tasks (id, owner, name, created_at, updated_at) VALUES (?, ?, ?, 1, 1)`,
			fmt.Sprintf("task_%04d", i), fmt.Sprintf("user%02d", i%50), fmt.Sprintf("t%04d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.db.ExecContext(t.Context(), `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	count, page := taskListQueries(`1 = 1`, false, true)
	if plan := queryPlan(t, db, count, "user01"); strings.Contains(plan, "sqlite_autoindex_tasks_1") || !strings.Contains(plan, "COVERING INDEX tasks_owner_id") {
		t.Errorf("the count looks tasks up by id or reads more than the owner index:\n%s", plan)
	}
	plan := queryPlan(t, db, page, "user01", "task_0000", "task_0000", 21)
	if !strings.Contains(plan, "SEARCH t USING INDEX tasks_owner_id (owner=? AND id>?)") {
		t.Errorf("the page does not read the viewer's own tasks from tasks_owner_id after the cursor:\n%s", plan)
	}
	if !strings.Contains(plan, "MERGE (UNION ALL)") {
		t.Errorf("the page sorts the viewer's own tasks instead of merging them in index order:\n%s", plan)
	}
}

// TestAssetListReadsOwnAssetsFromTheOwnerIndex: the Asset Center reads the
// viewer's own assets, row and all, from their owner index in order and
// merges the others', instead of looking each visible asset up by id and
// sorting them all.
func TestAssetListReadsOwnAssetsFromTheOwnerIndex(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 200 {
		id := fmt.Sprintf("asset_%04d", i)
		if _, err := db.db.ExecContext(t.Context(), `INSERT INTO assets (id, owner, kind, name, version, created_at, updated_at) VALUES (?, ?, 'skill', ?, 1, 1, 1)`,
			id, fmt.Sprintf("user%02d", i%50), fmt.Sprintf("s%04d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.db.ExecContext(t.Context(), `INSERT INTO asset_versions (asset_id, version, body, created_at) VALUES (?, 1, 'b', 1)`, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.db.ExecContext(t.Context(), `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	plan := queryPlan(t, db, assetListQuery(`1 = 1`, `?2`), "user01", 200)
	own, _, _ := strings.Cut(plan, "RIGHT")
	if !strings.Contains(plan, "MERGE (UNION ALL)") || !strings.Contains(own, "SEARCH a USING INDEX sqlite_autoindex_assets_2 (owner=?)") || strings.Contains(own, "sqlite_autoindex_assets_1") {
		t.Errorf("the Asset Center does not merge the viewer's own assets, read from their owner index, with the others':\n%s", plan)
	}
}
