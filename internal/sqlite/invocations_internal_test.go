package sqlite

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
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
		q, args := storerules.InvocationSearch(f, stored)
		plan := queryPlan(t, db, q, args...)
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

func indexExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// BenchmarkAppendInvocations stores invocation records in the recorder's
// batches of 64, on a store as migrated (00017) and on one with the
// (executor, time) index put back (the schema before 00017), alternately
// in one loop so that both see the same load, and reports the time per
// record of each and their ratio.
//
//	go test ./internal/sqlite/ -run '^$' -bench AppendInvocations -benchtime 300x
func BenchmarkAppendInvocations(b *testing.B) {
	open := func(withExecutorTime bool) *DB {
		db, err := Open(b.Context(), filepath.Join(b.TempDir(), "duet.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		if withExecutorTime {
			if _, err := db.SQL().ExecContext(b.Context(), `CREATE INDEX mcp_invocations_executor ON mcp_invocations (executor, time)`); err != nil {
				b.Fatal(err)
			}
		}
		return db
	}
	dbs := []*DB{open(false), open(true)}
	const batch = 64
	executors := []string{"alice", "bob", "carol", "dave"}
	var took [2]time.Duration
	now := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, db := range dbs {
			recs := make([]*duet.Invocation, batch)
			for k := range recs {
				recs[k] = &duet.Invocation{Time: now.Add(time.Duration(i*batch+k) * time.Microsecond), TraceID: duet.NewTraceID(),
					Executor: executors[k%len(executors)], Source: duet.SourceAgent, ServerKey: "mcp_bench_0badcafe", Tool: "add",
					Outcome: duet.OutcomeOK, DurationUs: 480, ArgBytes: 13, ResultBytes: 120}
			}
			t0 := time.Now()
			if err := db.AppendInvocations(b.Context(), recs); err != nil {
				b.Fatal(err)
			}
			took[j] += time.Since(t0)
		}
	}
	b.StopTimer()
	n := float64(b.N * batch)
	b.ReportMetric(float64(took[0].Nanoseconds())/n, "00017-ns/record")
	b.ReportMetric(float64(took[1].Nanoseconds())/n, "before-ns/record")
	b.ReportMetric(float64(took[0])/float64(took[1]), "00017/before")
}
