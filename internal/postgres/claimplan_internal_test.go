package postgres

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// TestClaimKeysOncePerExecutor: a claim orders the claimable runs by keys of
// their executor (runs running, last served), and computes those keys once
// per executor with a claimable run, not once per run. With alice's 60 runs
// and bob's 3 queued, each key's subquery runs twice, where computed per run
// it ran 63 times and a long queue made every claim read the whole of it.
func TestClaimKeysOncePerExecutor(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := t.Context()
	for _, q := range []string{
		`INSERT INTO tasks (id, owner, name, created_at, updated_at) VALUES ('task_1', 'alice', 't', now(), now())`,
		`INSERT INTO runs (id, task_id, status, triggered_by, call_source, created_at)
			SELECT 'run_' || lpad(i::text, 5, '0'), 'task_1', 'queued', CASE WHEN i % 21 = 0 THEN 'bob' ELSE 'alice' END, 'mcp', now()
			FROM generate_series(1, 63) AS i`,
		`ANALYZE runs`,
	} {
		if _, err := db.pool.Exec(c, q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.pool.Begin(c)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(c) // EXPLAIN ANALYZE runs the claim: take it back
	now := ts(time.Now())
	lines := explainOn(t, tx, `ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF`, claimSQL, now, "", "w1", now.Add(time.Minute))
	plan := strings.Join(lines, "\n")
	loops := regexp.MustCompile(`loops=(\d+)`)
	subplans := 0
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), "SubPlan") || i+1 == len(lines) {
			continue
		}
		subplans++
		m := loops.FindStringSubmatch(lines[i+1])
		if m == nil {
			t.Fatalf("no loops under %q:\n%s", l, plan)
		}
		if n, _ := strconv.Atoi(m[1]); n > 2 {
			t.Errorf("%s ran %d times, want once per executor (2):\n%s", strings.TrimSpace(l), n, plan)
		}
	}
	if subplans != 2 {
		t.Errorf("got %d subplans, want the two keys:\n%s", subplans, plan)
	}
	if !strings.Contains(plan, "rows=1 loops=1") {
		t.Errorf("the claim took no run:\n%s", plan)
	}
}
