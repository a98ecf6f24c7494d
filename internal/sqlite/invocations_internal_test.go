package sqlite

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestInvocationListsUseExecutorID: every list of an executor's invocation
// records — with or without time bounds (the CLI's --since, the API's
// before) and other filters — is read from (executor, id) in the list's
// order, with no sort, and migration 00017 dropped the overlapping
// (executor, time) index that no list needs; its Down puts it back.
func TestInvocationListsUseExecutorID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "duet.db")
	db, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	for _, f := range []duet.InvocationFilter{
		{Executor: "alice"},
		{Executor: "alice", Since: now.Add(-time.Hour)},
		{Executor: "alice", Until: now.Add(-time.Hour)},
		{Executor: "alice", Since: now.Add(-2 * time.Hour), Until: now.Add(-time.Hour)},
		{Executor: "alice", ServerKey: "mcp_x", Tool: "add", Outcome: duet.OutcomeOK},
	} {
		q, args := invocationsQuery(f)
		plan := queryPlan(t, db.SQL(), q, args)
		if !strings.Contains(plan, "mcp_invocations_executor_id") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%+v: plan %q, want a search of mcp_invocations_executor_id without a sort", f, plan)
		}
	}
	if indexExists(t, db.SQL(), "mcp_invocations_executor") {
		t.Fatal("mcp_invocations_executor (executor, time) still exists")
	}

	// Down and up again.
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	p, err := provider(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 16); err != nil {
		t.Fatal(err)
	}
	if !indexExists(t, raw, "mcp_invocations_executor") {
		t.Fatal("the Down of 00017 did not restore mcp_invocations_executor")
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if indexExists(t, raw, "mcp_invocations_executor") {
		t.Fatal("mcp_invocations_executor exists after up again")
	}
}

func queryPlan(t *testing.T, db *sql.DB, q string, args []any) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "; ")
}

func indexExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}
