package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/postgres/pgtest"
)

// lastQuery is a pgx tracer that keeps the last statement sent and its
// arguments.
type lastQuery struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (l *lastQuery) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sql, l.args = d.SQL, d.Args
	return ctx
}

func (l *lastQuery) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestAuditReadsUseTheirIndexes: every shape of FindAudit's statement
// that the console and the API send (a caller's trail, one trace,
// everyone's, with a "since" or a "before" as the console pages back) is
// read from audit_caller_id, audit_trace or the primary key, never by a
// sequential scan; everyone's trail newest first from the primary key,
// stopping at the page. So migration 00037 could drop audit_time and
// audit_caller, which every insert paid for (with them, a window was read
// from them and sorted). What they still served better: a narrow window
// far in the past (both bounds) — now read from the newest record down to
// it, or by the caller's index (docs/performance.md).
func TestAuditReadsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	lq := &lastQuery{}
	db, err := Open(t.Context(), pgtest.URL(t), &Options{Tracer: lq})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := t.Context()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, q := range []string{
		`INSERT INTO audit (time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes)
			SELECT timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second', 'trace' || i, 'mcp', 'user' || (i % 200), 'tools/call', 'get_test_task', 'OK', 1, 1, 1
			FROM generate_series(1, 40000) AS i`,
		`VACUUM ANALYZE audit`,
	} {
		if _, err := db.pool.Exec(c, q); err != nil {
			t.Fatal(err)
		}
	}
	mid, recent := start.Add(20000*time.Second), start.Add(39000*time.Second)
	for _, tc := range []struct {
		name  string
		f     duet.AuditFilter
		index string
	}{
		{"a caller's", duet.AuditFilter{Caller: "user7"}, "audit_caller_id"},
		{"a caller's, before", duet.AuditFilter{Caller: "user7", Until: mid}, "audit_caller_id"},
		{"a caller's, since", duet.AuditFilter{Caller: "user7", Since: recent}, "audit_caller_id"},
		{"a caller's tool, window", duet.AuditFilter{Caller: "user7", Tool: "get_test_task", Since: start, Until: mid}, "audit_caller_id"},
		{"a trace", duet.AuditFilter{TraceID: "trace77"}, "audit_trace"},
		{"everyone's", duet.AuditFilter{}, "audit_pkey"},
		{"everyone's, before", duet.AuditFilter{Until: mid}, "audit_pkey"},
		{"everyone's, since", duet.AuditFilter{Since: recent}, "audit_pkey"},
	} {
		if _, err := db.FindAudit(c, tc.f); err != nil {
			t.Fatal(err)
		}
		lq.mu.Lock()
		q, args := lq.sql, lq.args
		lq.mu.Unlock()
		p := explain(t, db, q, args...)
		if strings.Contains(p, "Seq Scan on audit") || !strings.Contains(p, tc.index) || tc.index == "audit_pkey" && strings.Contains(p, "Sort") {
			t.Errorf("%s: want it read from %s (the primary key newest first, without a sort), never by a sequential scan:\n%s", tc.name, tc.index, p)
		}
	}
}
