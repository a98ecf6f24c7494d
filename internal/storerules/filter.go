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
// (audit, mcp_invocations) that f selects, newest first, at most limit of
// them (100 unless given, 10,000 at most), and its arguments.
func (f *Filter) newestFirst(columns, table string, limit int) (string, []any) {
	q := `SELECT ` + columns + ` FROM ` + table + ` WHERE ` + f.Where() + ` ORDER BY id DESC LIMIT `
	q += f.Add(ClampLimit(limit, 100, 10000))
	return q, f.Args
}

// AuditSearch is the statement FindAudit runs for f, and its arguments:
// newest first, at most f.Limit records (ScanAudit reads them).
func AuditSearch(f duet.AuditFilter, stored StoredTime) (string, []any) {
	w := Filter{Stored: stored}
	w.Eq("caller", f.Caller)
	w.Eq("tool", f.Tool)
	w.Eq("method", f.Method)
	w.Eq("call_source", string(f.CallSource))
	w.Eq("outcome", string(f.Outcome))
	w.Eq("trace_id", f.TraceID)
	w.Between("time", f.Since, f.Until)
	return w.newestFirst(`id, time, trace_id, call_source, caller, method, tool, outcome, duration_us, arg_bytes, result_bytes`, `audit`, f.Limit)
}

// ScanAudit reads an audit record of AuditSearch.
func ScanAudit(r Row) (*duet.AuditRecord, error) {
	var a duet.AuditRecord
	err := r.Scan(&a.ID, TimeOf(&a.Time), &a.TraceID, &a.CallSource, &a.Caller, &a.Method, &a.Tool, &a.Outcome, &a.DurationUs, &a.ArgBytes, &a.ResultBytes)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// InvocationSearch is the statement FindInvocations runs for f, and its
// arguments: newest first, so that an executor's list comes from
// (executor, id) in its order and stops at the limit (migration 00017);
// ScanInvocation reads them.
func InvocationSearch(f duet.InvocationFilter, stored StoredTime) (string, []any) {
	w := Filter{Stored: stored}
	w.Eq("executor", f.Executor)
	w.Eq("server_key", f.ServerKey)
	w.Eq("tool", f.Tool)
	w.Eq("source", string(f.Source))
	w.Eq("outcome", string(f.Outcome))
	w.Eq("trace_id", f.TraceID)
	w.Between("time", f.Since, f.Until)
	return w.newestFirst(`id, time, trace_id, executor, source, server_key, tool, outcome, duration_us, arg_bytes, result_bytes`, `mcp_invocations`, f.Limit)
}

// ScanInvocation reads an invocation record of InvocationSearch.
func ScanInvocation(r Row) (*duet.Invocation, error) {
	var v duet.Invocation
	err := r.Scan(&v.ID, TimeOf(&v.Time), &v.TraceID, &v.Executor, &v.Source, &v.ServerKey, &v.Tool, &v.Outcome, &v.DurationUs, &v.ArgBytes, &v.ResultBytes)
	if err != nil {
		return nil, err
	}
	return &v, nil
}
