package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditReadsUseTheirIndexes: the shapes of FindAudit's statement (a
// caller's trail, one trace, everyone's, with a "since" or a "before" as
// the console pages back; the WHERE built as FindAudit builds it) are read
// newest first from audit_caller_id, audit_trace or the rowid, never by a
// scan of the table in another order: so migration 00037 could drop
// audit_time and audit_caller, which every insert paid for (the
// PostgreSQL test of the same name runs FindAudit itself).
func TestAuditReadsUseTheirIndexes(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
			INSERT INTO audit (time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes)
			SELECT i * 1000000, 'trace' || i, 'mcp', 'user' || (i % 200), 'tools/call', 'get_test_task', 'OK', 1, 1, 1 FROM n`,
		`ANALYZE`,
	} {
		if _, err := db.db.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	const sel = `SELECT id, time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes FROM audit WHERE `
	for _, tc := range []struct {
		where string
		args  []any
		want  string
	}{
		{`caller = ?`, []any{"user7"}, "USING INDEX audit_caller_id (caller=?)"},
		{`caller = ? AND time < ?`, []any{"user7", 10000 * 1000000}, "USING INDEX audit_caller_id (caller=?)"},
		{`caller = ? AND time >= ?`, []any{"user7", 19000 * 1000000}, "USING INDEX audit_caller_id (caller=?)"},
		{`caller = ? AND tool = ? AND time >= ? AND time < ?`, []any{"user7", "get_test_task", 1, 10000 * 1000000}, "USING INDEX audit_caller_id (caller=?)"},
		{`trace_id = ?`, []any{"trace77"}, "USING INDEX audit_trace (trace_id=?)"},
		{`TRUE`, nil, "SCAN audit"},
		{`time < ?`, []any{10000 * 1000000}, "SCAN audit"},
		{`time >= ?`, []any{19000 * 1000000}, "SCAN audit"},
	} {
		p := queryPlan(t, db, sel+tc.where+` ORDER BY id DESC LIMIT ?`, append(tc.args, 100)...)
		if !strings.Contains(p, tc.want) || strings.Contains(p, "TEMP B-TREE") || tc.want == "SCAN audit" && strings.Contains(p, "INDEX") {
			t.Errorf("%s: want it read newest first %s, without a sort:\n%s", tc.where, tc.want, p)
		}
	}
}
