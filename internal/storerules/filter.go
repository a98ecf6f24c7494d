package storerules

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// Row is one row of either engine's result (database/sql's Row and Rows,
// pgx's Row and Rows).
type Row interface{ Scan(dest ...any) error }

// StoredTime is how an engine writes a time as a parameter (SQLite: its
// microseconds since the epoch; PostgreSQL: the time to the microsecond).
type StoredTime func(time.Time) any

// TimeOf is a scan destination that reads a stored time into *t, in UTC,
// whichever way the engine keeps it (SQLite: microseconds since the epoch;
// PostgreSQL: timestamptz). NULL reads as the zero time.
func TimeOf(t *time.Time) sql.Scanner { return timeDest{t} }

type timeDest struct{ t *time.Time }

func (d timeDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.t = time.Time{}
	case int64:
		*d.t = time.UnixMicro(v).UTC()
	case time.Time:
		*d.t = v.UTC()
	default:
		return fmt.Errorf("cannot read a time from %T", src)
	}
	return nil
}

// Filter builds the WHERE clause of a query from optional conditions, with
// $n parameters (which SQLite reads as well as PostgreSQL): a condition
// whose value is empty is left out.
type Filter struct {
	Conds []string
	Args  []any
	// Stored writes Between's bounds.
	Stored StoredTime
}

// Add appends v to the arguments and returns its parameter ($n).
func (f *Filter) Add(v any) string {
	f.Args = append(f.Args, v)
	return "$" + strconv.Itoa(len(f.Args))
}

// Eq adds "col = v" unless v is empty.
func (f *Filter) Eq(col, v string) {
	if v != "" {
		f.Conds = append(f.Conds, col+" = "+f.Add(v))
	}
}

// Between adds since <= col < until for the bounds that are set.
func (f *Filter) Between(col string, since, until time.Time) {
	if !since.IsZero() {
		f.Conds = append(f.Conds, col+" >= "+f.Add(f.Stored(since)))
	}
	if !until.IsZero() {
		f.Conds = append(f.Conds, col+" < "+f.Add(f.Stored(until)))
	}
}

// Where returns the clause ("1 = 1" when there is no condition).
func (f *Filter) Where() string {
	if len(f.Conds) == 0 {
		return "1 = 1"
	}
	return strings.Join(f.Conds, " AND ")
}

// newestFirst is the query of columns of the records of the log table
// (audit, mcp_invocations) that match eq (column, value pairs; an empty
// value is no condition) and were made from since until until, newest
// first, at most limit of them (100 unless given, 10,000 at most), and its
// arguments.
func newestFirst(stored StoredTime, columns, table string, since, until time.Time, limit int, eq ...string) (string, []any) {
	w := Filter{Stored: stored}
	for i := 0; i+1 < len(eq); i += 2 {
		w.Eq(eq[i], eq[i+1])
	}
	w.Between("time", since, until)
	q := `SELECT ` + columns + ` FROM ` + table + ` WHERE ` + w.Where() + ` ORDER BY id DESC LIMIT `
	q += w.Add(ClampLimit(limit, 100, 10000))
	return q, w.Args
}

// ScanAudit reads an audit record of AuditSearch.
func ScanAudit(r Row) (*duet.AuditRecord, error) {
	var a duet.AuditRecord
	return scanned(&a, r.Scan(&a.ID, TimeOf(&a.Time), &a.TraceID, &a.CallSource, &a.Caller, &a.Method, &a.Tool, &a.Outcome, &a.DurationUs, &a.ArgBytes, &a.ResultBytes))
}

// AuditSearch is the statement FindAudit runs for f, and its arguments:
// newest first, at most f.Limit records (ScanAudit reads them).
func AuditSearch(f duet.AuditFilter, stored StoredTime) (string, []any) {
	return newestFirst(stored, `id, time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes`, `audit`, f.Since, f.Until, f.Limit,
		"caller", f.Caller, "tool", f.Tool, "method", f.Method, "call_source", string(f.CallSource), "outcome", string(f.Outcome), "trace_id", f.TraceID)
}

// InvocationSearch is the statement FindInvocations runs for f, and its
// arguments: newest first, so that an executor's list comes from
// (executor, id) in its order and stops at the limit (migration 00017);
// ScanInvocation reads them.
func InvocationSearch(f duet.InvocationFilter, stored StoredTime) (string, []any) {
	return newestFirst(stored, `id, time, trace_id, executor, source, server_key, tool, outcome, duration_us, arg_bytes, result_bytes`, `mcp_invocations`, f.Since, f.Until, f.Limit,
		"executor", f.Executor, "server_key", f.ServerKey, "tool", f.Tool, "source", string(f.Source), "outcome", string(f.Outcome), "trace_id", f.TraceID)
}

// ScanInvocation reads an invocation record of InvocationSearch.
func ScanInvocation(r Row) (*duet.Invocation, error) {
	var v duet.Invocation
	return scanned(&v, r.Scan(&v.ID, TimeOf(&v.Time), &v.TraceID, &v.Executor, &v.Source, &v.ServerKey, &v.Tool, &v.Outcome, &v.DurationUs, &v.ArgBytes, &v.ResultBytes))
}
