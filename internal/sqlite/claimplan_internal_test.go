package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimKeysOncePerExecutor: a claim orders the claimable runs by keys of
// their executor (runs running, last served) computed once per executor
// with a claimable run, inside the executors table it materialises, not by
// a subquery per claimable run, which made every claim read the whole of a
// long queue.
func TestClaimKeysOncePerExecutor(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := t.Context()
	if _, err := db.db.ExecContext(c, `INSERT INTO tasks (id, owner, name, created_at, updated_at) VALUES ('task_1', 'alice', 't', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for i := range 63 {
		who := "alice"
		if i%21 == 20 {
			who = "bob"
		}
		if _, err := db.db.ExecContext(c, `INSERT INTO runs (id, task_id, status, triggered_by, call_source, created_at) VALUES (?, 'task_1', 'queued', ?, 'mcp', 1)`,
			fmt.Sprintf("run_%05d", i), who); err != nil {
			t.Fatal(err)
		}
	}
	nodes := map[int]planNode{}
	var lines []string
	for _, n := range planNodes(t, db, claimQuery, int64(2), "") {
		nodes[n.id] = n
		lines = append(lines, n.detail)
	}
	plan := strings.Join(lines, "\n")
	subqueries := 0
	for _, n := range nodes {
		if !strings.HasPrefix(n.detail, "CORRELATED SCALAR SUBQUERY") {
			continue
		}
		subqueries++
		inside := false
		for p, ok := nodes[n.parent]; ok; p, ok = nodes[p.parent] {
			inside = inside || strings.HasPrefix(p.detail, "MATERIALIZE executors")
		}
		if !inside {
			t.Errorf("%q runs outside the executors table, once per claimable run:\n%s", n.detail, plan)
		}
	}
	if subqueries != 2 {
		t.Errorf("got %d correlated subqueries, want the two keys:\n%s", subqueries, plan)
	}
	// And the claim takes the run the policy names: alice's first.
	if r, err := db.ClaimRun(c, "w1", 60e9); err != nil || r == nil || r.ID != "run_00000" {
		t.Fatalf("ClaimRun: got %+v, %v; want run_00000", r, err)
	}
}
